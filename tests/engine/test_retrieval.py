"""Retrieval over small corpora: grading, ordering, no-evidence reasons, filters."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from lookup_knowledge.engine.corpus import load_documents
from lookup_knowledge.engine.index import KnowledgeIndex, NoEvidenceBasis
from lookup_knowledge.engine.scoring import Level


@pytest.fixture
def index(small_kb: Path) -> KnowledgeIndex:
    return KnowledgeIndex(load_documents(small_kb))


def test_an_english_exact_topic_query_is_precise_on_its_runbook(index: KnowledgeIndex) -> None:
    result = index.search("redis memory usage high", top_k=5)

    assert result.hits[0].chunk.source == "redis/redis-memory.md"
    assert result.hits[0].quality_score >= 0.75
    assert result.hits[0].level is Level.PRECISE


def test_a_chinese_exact_topic_query_is_precise_on_its_runbook(index: KnowledgeIndex) -> None:
    result = index.search("网关超时怎么排查", top_k=5)

    assert result.hits[0].chunk.source == "gateway/gateway-timeout.zh.md"
    assert result.hits[0].quality_score >= 0.75


def test_a_chinese_query_finds_an_english_runbook_through_the_glossary(
    index: KnowledgeIndex,
) -> None:
    result = index.search("redis 内存过高", top_k=5)

    assert result.hits[0].chunk.source == "redis/redis-memory.md"
    assert result.hits[0].quality_score >= 0.75


def test_gibberish_has_no_candidates(index: KnowledgeIndex) -> None:
    result = index.search("qwzx plorf vindle", top_k=5)

    assert result.hits == ()
    assert result.recall_count == 0
    assert result.no_evidence_basis is NoEvidenceBasis.NO_CANDIDATES


def test_an_unrelated_query_has_no_evidence(index: KnowledgeIndex) -> None:
    assert index.search("how to bake sourdough bread", top_k=5).hits == ()


def test_sharing_one_word_with_the_query_is_below_the_threshold(index: KnowledgeIndex) -> None:
    result = index.search("memory foam mattress prices", top_k=5)

    assert result.hits == ()
    assert result.recall_count > 0
    assert result.no_evidence_basis is NoEvidenceBasis.ALL_BELOW_THRESHOLD


def test_a_query_of_only_stopwords_has_no_candidates(index: KnowledgeIndex) -> None:
    result = index.search("how to do it? 怎么办", top_k=5)

    assert result.no_evidence_basis is NoEvidenceBasis.NO_CANDIDATES


def test_hits_come_best_first_and_all_reach_the_reference_threshold(
    index: KnowledgeIndex,
) -> None:
    hits = index.search("kafka consumer lag partition", top_k=20).hits

    assert hits
    assert all(0.5 <= h.quality_score <= 1.0 for h in hits)
    keys = [(-h.quality_score, -h.bm25_score) for h in hits]
    assert keys == sorted(keys)


def test_top_k_bounds_the_number_of_hits(index: KnowledgeIndex) -> None:
    assert len(index.search("redis memory", top_k=2).hits) == 2


def test_the_same_query_always_gives_the_same_answer(index: KnowledgeIndex) -> None:
    first = index.search("redis memory eviction", top_k=10)
    second = index.search("redis memory eviction", top_k=10)

    assert first == second


def test_category_filter_keeps_only_that_category(index: KnowledgeIndex) -> None:
    unfiltered = index.search("timeout memory lag", top_k=20)
    filtered = index.search("kafka lag", top_k=20, filters={"category": "streaming"})

    assert {h.chunk.source for h in unfiltered.hits} != {"streaming/kafka-lag.md"}
    assert filtered.hits
    assert {h.chunk.source for h in filtered.hits} == {"streaming/kafka-lag.md"}


def test_a_category_that_matches_nothing_has_no_candidates(index: KnowledgeIndex) -> None:
    result = index.search("redis memory", top_k=5, filters={"category": "gateway"})

    assert result.hits == ()
    assert result.no_evidence_basis is NoEvidenceBasis.NO_CANDIDATES


def test_filters_match_other_front_matter_fields_and_tags(index: KnowledgeIndex) -> None:
    assert index.search("redis memory", top_k=5, filters={"lang": "EN", "tags": "memory"}).hits
    assert not index.search("redis memory", top_k=5, filters={"lang": "zh"}).hits
    assert not index.search("redis memory", top_k=5, filters={"owner": "x"}).hits


def test_title_and_breadcrumb_are_searched_as_well_as_content(
    write_docs: Callable[[dict[str, str]], Path],
) -> None:
    docs = write_docs({"a.md": "# Alpha runbook\n\n## Zebra section\n\nnothing else here\n"})
    hits = KnowledgeIndex(load_documents(docs)).search("alpha zebra", top_k=5).hits

    assert [h.quality_score for h in hits] == [1.0]
