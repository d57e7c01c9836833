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


def test_sharing_one_common_word_with_a_long_question_is_below_the_threshold(
    index: KnowledgeIndex,
) -> None:
    result = index.search(
        "which memory foam mattress brand has the lowest prices in europe", top_k=5
    )

    assert result.hits == ()
    assert result.recall_count > 0
    assert result.no_evidence_basis is NoEvidenceBasis.ALL_BELOW_THRESHOLD


def test_a_query_of_only_stopwords_has_no_candidates(index: KnowledgeIndex) -> None:
    result = index.search("how to do it? 怎么办", top_k=5)

    assert result.no_evidence_basis is NoEvidenceBasis.NO_CANDIDATES


def test_hits_come_in_rank_order_the_first_graded_and_none_under_the_floor(
    index: KnowledgeIndex,
) -> None:
    hits = index.search("kafka consumer lag partition", top_k=20).hits

    assert hits and hits[0].quality_score >= 0.5
    assert all(0.2 <= h.quality_score <= 1.0 for h in hits)
    ranks = [h.rank_score for h in hits]
    assert ranks == sorted(ranks, reverse=True)


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

    assert [h.level for h in hits] == [Level.PRECISE]


def test_front_matter_tags_are_searched_in_every_section_of_their_document(
    write_docs: Callable[[dict[str, str]], Path],
) -> None:
    docs = write_docs(
        {
            "redis/latency.md": "---\ncategory: redis\ntags: 慢查询, slowlog\n---\n"
            "# Redis latency\n\nIntro.\n\n## Steps\n\nRun SLOWLOG GET 10 to see slow commands.\n",
            "mysql/slow.md": "---\ncategory: mysql\n---\n# MySQL 慢查询\n\n开启慢查询日志。\n",
        }
    )
    index = KnowledgeIndex(load_documents(docs))

    hits = index.search("慢查询", top_k=10, filters={"category": "redis"}).hits

    assert {h.chunk.breadcrumb for h in hits} == {"Redis latency", "Redis latency > Steps"}
    assert hits[0].level is Level.PRECISE


def test_english_inflections_find_each_other(
    write_docs: Callable[[dict[str, str]], Path],
) -> None:
    docs = write_docs(
        {"kafka.md": "# Kafka consumer group storms\n\nThe group rebalances often.\n"}
    )
    index = KnowledgeIndex(load_documents(docs))

    hits = index.search("kafka consumers keep rebalancing", top_k=5).hits

    assert hits and hits[0].chunk.source == "kafka.md"
    assert hits[0].quality_score >= 0.75


def test_conversational_fillers_do_not_hold_a_covered_question_under_the_threshold(
    index: KnowledgeIndex,
) -> None:
    result = index.search("kafka 消费积压越来越多了，感觉好像一直消费不过来", top_k=5)

    assert result.hits and result.hits[0].chunk.source == "streaming/kafka-lag.md"
    assert result.hits[0].level is Level.PRECISE


def test_a_stopword_jieba_glued_onto_a_word_does_not_count_as_an_unknown_term(
    write_docs: Callable[[dict[str, str]], Path],
) -> None:
    docs = write_docs({"redis.md": "# Redis 大 key\n\n用 --bigkeys 扫描大 key。\n"})
    index = KnowledgeIndex(load_documents(docs))

    hits = index.search("怀疑有大 key", top_k=5).hits  # jieba: 怀疑 / 有大 / key

    assert hits and hits[0].level is Level.PRECISE


def test_a_chinese_word_no_document_knows_stays_unknown(index: KnowledgeIndex) -> None:
    result = index.search("红烧肉怎么做才好吃", top_k=5)

    assert result.hits == ()
    assert result.no_evidence_basis is NoEvidenceBasis.NO_CANDIDATES


def test_one_rare_shared_word_does_not_make_an_answer(
    write_docs: Callable[[dict[str, str]], Path],
) -> None:
    docs = write_docs(
        {
            "clock.md": "# Clock skew\n\n## Prevention\n\nBake NTP into the base image.\n",
            "disk.md": "# Disk full\n\nFree space on the root volume.\n",
            "cpu.md": "# High CPU\n\nFind the hot thread.\n",
        }
    )
    index = KnowledgeIndex(load_documents(docs))

    result = index.search("how to bake sourdough bread", top_k=5)

    assert result.hits == ()
    assert result.no_evidence_basis is NoEvidenceBasis.ALL_BELOW_THRESHOLD


def test_a_pasted_log_line_finds_the_runbook_of_its_message_not_one_quoting_a_log(
    write_docs: Callable[[dict[str, str]], Path],
) -> None:
    sample = (
        "level=warn ts=2021-01-04T15:08:55.613Z caller=scrape.go:1372 "
        'component="scrape manager" msg="Error on ingesting samples"\n'
    )
    docs = write_docs(
        {
            "duplicates.md": "# Duplicate timestamps\n\nThe logs show lines such as:\n\n"
            f"```\n{sample * 3}```\n",
            "queue.md": "# Queue running full\n\nNotifications to Alertmanager are dropped.\n",
            "disk.md": "# Disk full\n\nFree space on the root volume.\n",
        }
    )
    index = KnowledgeIndex(load_documents(docs))

    hits = index.search(
        "level=warn ts=2024-02-16T19:48:03.771Z caller=notifier.go:371 component=notifier "
        'msg="Alert notification queue full, dropping alerts" num_dropped=200',
        top_k=5,
    ).hits

    assert hits and hits[0].chunk.source == "queue.md"


def test_a_query_term_in_the_heading_path_weighs_more_than_one_in_passing(
    write_docs: Callable[[dict[str, str]], Path],
) -> None:
    docs = write_docs(
        {
            "sidecar.md": "# Config reloader sidecar errors\n\nThe reloader runs next to "
            "Prometheus.\n",
            "inject.md": "# Admission webhooks\n\nA sidecar may be injected by a webhook "
            "and the reloader restarted.\n",
        }
    )
    index = KnowledgeIndex(load_documents(docs))

    graded = index.grade("sidecar reloader errors")

    assert not isinstance(graded, NoEvidenceBasis)
    first = int(graded.order[0])
    assert index.chunk(int(graded.candidates[first])).source == "sidecar.md"
    qualities = {
        index.chunk(int(c)).source: float(q)
        for c, q in zip(graded.candidates, graded.quality, strict=True)
    }
    assert qualities["sidecar.md"] > qualities["inject.md"]
