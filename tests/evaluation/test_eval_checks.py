"""Behaviour assertions: the case's own expectations and the docs/pipeline.md rules as an oracle."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from builders import WORKED_EXAMPLE, hit
from lookup_knowledge.domain.contract import RagEvidenceItem, RagToolResult
from lookup_knowledge.domain.models import (
    EvidenceStatus,
    KnowledgeSearchHit,
    RelevanceLevel,
    SearchOutcome,
)
from lookup_knowledge.evaluation.cases import CaseFileError, Expectation, load_golden_cases
from lookup_knowledge.evaluation.checks import (
    check_expectation,
    check_rules,
    expected_selection,
)
from lookup_knowledge.evaluation.runner import CaseRun, RunConfig, run_query
from lookup_knowledge.pipeline import run as pipeline_run
from lookup_knowledge.pipeline.postprocess import postprocess

CONFIG = RunConfig.defaults()
FOUND, EMPTY = EvidenceStatus.EVIDENCE_FOUND, EvidenceStatus.NO_EVIDENCE


def result(
    status: EvidenceStatus = FOUND,
    level: RelevanceLevel | None = RelevanceLevel.PRECISE,
    *,
    truncated: bool = False,
) -> RagToolResult:
    evidence = (RagEvidenceItem(document_id="a#chunk-0", excerpt="x"),) if status is FOUND else ()
    return RagToolResult(
        evidence_status=status,
        tool_call_id="eval-x",
        query="q",
        evidence=evidence,
        returned_count=len(evidence),
        relevance_level=level if evidence else None,
        truncated=truncated,
    )


def checks(expect: Expectation, got: RagToolResult) -> list[str]:
    return [f.check for f in check_expectation(expect, got)]


def test_a_negative_case_fails_when_evidence_comes_back() -> None:
    assert checks(Expectation(evidence_status=EMPTY), result()) == ["expect.evidence_status"]
    assert checks(Expectation(evidence_status=EMPTY), result(EMPTY)) == []


def test_a_minimum_level_of_reference_is_met_by_precise_but_not_the_other_way() -> None:
    at_least_reference = Expectation(
        evidence_status=FOUND, min_relevance_level=RelevanceLevel.REFERENCE
    )
    at_least_precise = Expectation(
        evidence_status=FOUND, min_relevance_level=RelevanceLevel.PRECISE
    )

    assert checks(at_least_reference, result(level=RelevanceLevel.PRECISE)) == []
    assert checks(at_least_precise, result(level=RelevanceLevel.REFERENCE)) == [
        "expect.min_relevance_level"
    ]
    assert checks(at_least_reference, result(EMPTY)) == [
        "expect.evidence_status",
        "expect.min_relevance_level",
    ]


def test_truncated_is_asserted_only_when_the_case_sets_it() -> None:
    assert checks(Expectation(evidence_status=FOUND), result(truncated=True)) == []
    assert checks(Expectation(evidence_status=FOUND, truncated=False), result(truncated=True)) == [
        "expect.truncated"
    ]


def test_the_oracle_selects_the_worked_example_of_the_spec() -> None:
    hits = [hit(key, score, rank) for rank, (key, score) in enumerate(WORKED_EXAMPLE, start=1)]

    assert expected_selection(hits, max_chunks_per_document=2, return_n=5) == (
        "gw#chunk-1",
        "gw#chunk-3",
        "nginx#chunk-2",
        "k8s#chunk-0",
        "lb#chunk-4",
    )


class FixedSearch:
    """A SearchPort that always answers the same hits."""

    def __init__(self, hits: Sequence[KnowledgeSearchHit]) -> None:
        self._hits = tuple(hits)

    async def search(self, query: str, *, filters: Mapping[str, str] | None) -> SearchOutcome:
        return SearchOutcome(hits=self._hits, upstream_status="supported")

    async def ping(self) -> None:
        return None


THREE_CHUNKS_OF_ONE_RUNBOOK = [
    hit("gw#chunk-0", 0.9, 1),
    hit("gw#chunk-1", 0.8, 2),
    hit("gw#chunk-2", 0.7, 3),
    hit("dns#chunk-0", 0.6, 4),
]


async def run(hits: Sequence[KnowledgeSearchHit]) -> CaseRun:
    return await run_query(
        FixedSearch(hits), "q", filters=None, tool_call_id="eval-x", config=CONFIG
    )


async def test_the_real_pipeline_satisfies_every_rule() -> None:
    case_run = await run(THREE_CHUNKS_OF_ONE_RUNBOOK)

    assert check_rules(case_run, CONFIG) == []
    assert case_run.documents == ("runbooks/gw.md", "runbooks/dns.md")


async def test_a_pipeline_ignoring_the_per_document_cap_breaks_the_selection_rule(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_cap(hits: Any, *, limits: Any) -> Any:
        return postprocess(hits, limits=dataclasses.replace(limits, max_chunks_per_document=99))

    monkeypatch.setattr(pipeline_run, "postprocess", no_cap)
    failures = check_rules(await run(THREE_CHUNKS_OF_ONE_RUNBOOK), CONFIG)

    assert [f.check for f in failures] == ["rule.selection"]


async def test_a_pipeline_grading_from_the_best_score_breaks_the_grade_rule(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def best_score_first(hits: Any, *, limits: Any) -> Any:
        result = postprocess(hits, limits=limits)
        best = max(h.score for h in hits)
        return dataclasses.replace(
            result, top_similarity=best, relevance_level=RelevanceLevel.PRECISE
        )

    monkeypatch.setattr(pipeline_run, "postprocess", best_score_first)
    failures = check_rules(
        await run([hit("a#chunk-0", 0.55, 1), hit("b#chunk-0", 0.95, 2)]), CONFIG
    )

    assert [f.check for f in failures] == ["rule.grade"]


def test_a_case_file_with_an_inconsistent_case_is_refused(tmp_path: Any) -> None:
    path = tmp_path / "cases.json"
    path.write_text(
        '[{"id": "x", "query": "q", "lang": "en", "expected_documents": ["a.md"],'
        ' "expect": {"evidence_status": "NO_EVIDENCE"}}]',
        encoding="utf-8",
    )
    with pytest.raises(CaseFileError, match="NO_EVIDENCE case expects no document"):
        load_golden_cases(path)


def test_a_case_file_with_duplicate_ids_is_refused(tmp_path: Any) -> None:
    case = '{"id": "x", "query": "q", "lang": "en", "expect": {"evidence_status": "NO_EVIDENCE"}}'
    path = tmp_path / "cases.json"
    path.write_text(f"[{case}, {case}]", encoding="utf-8")
    with pytest.raises(CaseFileError, match="duplicate case ids x"):
        load_golden_cases(path)
