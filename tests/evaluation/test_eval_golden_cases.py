"""The committed golden cases and fixtures are what the issue asks for, and consistent."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from lookup_knowledge.domain.models import EvidenceStatus
from lookup_knowledge.engine.corpus import load_documents
from lookup_knowledge.evaluation.cases import (
    GoldenCase,
    load_golden_cases,
    load_pipeline_cases,
)
from lookup_knowledge.evaluation.fixtures import load_fixture
from lookup_knowledge.evaluation.runner import RunConfig

EVAL = Path(__file__).resolve().parents[2] / "eval" / "rag-retrieval"
CASES = load_golden_cases(EVAL / "cases" / "golden-cases.json")


def test_there_are_at_least_40_cases_and_8_negative_ones() -> None:
    negatives = [c for c in CASES if c.is_negative]

    assert len(CASES) >= 40
    assert len(negatives) >= 8
    assert all(c.expect.evidence_status is EvidenceStatus.NO_EVIDENCE for c in negatives)


def test_the_cases_mix_languages_paraphrases_cross_language_and_multi_topic_queries() -> None:
    tags = Counter(tag for case in CASES for tag in case.tags)
    langs = Counter(case.lang for case in CASES)

    assert langs["zh"] and langs["en"]
    for kind in ("canonical", "paraphrase", "cross-language", "multi-topic", "long-query"):
        assert tags[kind] >= 2, kind
    assert any(len(case.expected_documents) == 2 for case in CASES)


def test_every_runbook_of_the_bundled_knowledge_base_is_some_case_s_target() -> None:
    sources = {document.source for document in load_documents()}
    expected = {doc for case in CASES for doc in case.expected_documents}

    assert expected <= sources, expected - sources
    assert expected == sources


def test_expected_documents_are_source_paths_not_engine_document_ids() -> None:
    for case in CASES:
        for document in case.expected_documents:
            assert document.endswith(".md") and "#" not in document, (case.id, document)


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_every_case_has_a_fixture_recorded_for_its_current_request(case: GoldenCase) -> None:
    fixture = load_fixture(EVAL / "fixtures", case.id)
    config = RunConfig.defaults()
    sent = {"query": case.query, "top_k": config.top_k, "mode": config.mode}
    if case.filters:
        sent["filters"] = case.filters

    assert fixture.request.body == sent
    assert fixture.response.status == 200


def test_the_pipeline_cases_load() -> None:
    assert len(load_pipeline_cases(EVAL / "cases" / "pipeline-cases.json")) >= 4
