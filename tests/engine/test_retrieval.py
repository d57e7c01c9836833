"""Retrieval over small corpora: grading, ordering, no-evidence reasons, filters."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from lookup_knowledge.engine import index as index_module
from lookup_knowledge.engine.corpus import load_documents
from lookup_knowledge.engine.index import KnowledgeIndex, NoEvidenceBasis
from lookup_knowledge.engine.markdown import Document
from lookup_knowledge.engine.query import Known
from lookup_knowledge.engine.scoring import Level
from lookup_knowledge.engine.tokenize import stem


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


def test_the_hits_are_the_first_then_the_rest_down_to_the_floor_in_order(
    index: KnowledgeIndex,
) -> None:
    from lookup_knowledge.engine import scoring

    query = "redis memory eviction slow"
    graded = index.grade(query)
    assert not isinstance(graded, NoEvidenceBasis)
    order = graded.order.tolist()
    expected = [order[0]] + [i for i in order[1:] if graded.quality[i] >= scoring.HIT_FLOOR]
    assert len(expected) < len(order)  # some candidate is under the floor: the rule is seen
    for top_k in (1, 3, len(order)):
        hits = index.search(query, top_k=top_k).hits
        assert [(h.quality_score, h.rank_score) for h in hits] == [
            (float(graded.quality[i]), float(graded.ranks[i])) for i in expected[:top_k]
        ]
        chunks = [index.chunk(int(graded.candidates[i])) for i in expected[:top_k]]
        assert [h.chunk for h in hits] == chunks


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


def test_a_filter_asks_each_document_once_however_often_it_is_sent(
    index: KnowledgeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[tuple[str, str]] = []
    matches = Document.matches

    def counting(self: Document, key: str, value: str) -> bool:
        asked.append((key, value))
        return matches(self, key, value)

    monkeypatch.setattr(Document, "matches", counting)
    first = index.search("kafka lag", top_k=20, filters={"category": "streaming"})
    again = index.search("kafka lag", top_k=20, filters={"Category ": "STREAMING"})

    assert len(asked) == len(index.documents)  # the second is the same filter
    assert first.hits and first.hits == again.hits
    # Past `FILTER_CACHE` filters the kept ones are let go, and asked again when sent again.
    monkeypatch.setattr(index_module, "FILTER_CACHE", 1)
    for _ in range(2):
        assert index.search("redis memory", top_k=5, filters={"tags": "memory"}).hits
        assert not index.search("redis memory", top_k=5, filters={"lang": "zh"}).hits
    assert len(asked) == 5 * len(index.documents)


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
    assert hits[0].level is not None  # answered: consumers and rebalancing are covered
    read = index.read("kafka consumers keep rebalancing")
    assert {c.token for c in read.concepts if c.known is Known.KNOWN} >= {
        stem("consumers"),
        stem("rebalancing"),
    }


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


_SYMPTOMS = (
    "The kernel log shows a page allocation failure with a high order, and the buddy "
    "allocator lists no free blocks of the larger sizes, even though plenty of space is "
    "free in small pages. Containers then fail to start, because the network namespace "
    "of a new pod needs a contiguous block for its connection tracking table. "
)
_FRAGMENTATION = (
    f"# Memory fragmentation\n\n## How to tell\n\n{_SYMPTOMS * 2}\n\n## How to recover\n\n"
    "Drop the page cache, then compact the zones if large blocks are still missing; "
    f"compaction stalls the node for a while, so run it off peak. {_SYMPTOMS}\n"
)
_CRASHLOOP = (
    "# Pod in CrashLoopBackOff\n\n## Exit codes\n\nLook at the last exit code first.\n\n"
    "## Memory fragmentation\n\nFragmentation of node memory makes allocations fail.\n\n"
    "## Failing probes\n\nA probe that fails too early restarts the container.\n"
)


def test_the_page_devoted_to_a_topic_outranks_a_neighbour_with_a_section_on_it(
    write_docs: Callable[[dict[str, str]], Path],
) -> None:
    # The neighbour's short section holds both words densely; the devoted page's long
    # sections hold them in its title only. Without the title field the section wins.
    docs = write_docs({"memory-fragmentation.md": _FRAGMENTATION, "crashloop.md": _CRASHLOOP})
    index = KnowledgeIndex(load_documents(docs))

    hits = index.search("memory fragmentation", top_k=5).hits

    assert hits and hits[0].chunk.source == "memory-fragmentation.md"


def test_the_file_name_names_a_page_in_english_whatever_the_language_of_its_title(
    write_docs: Callable[[dict[str, str]], Path],
) -> None:
    docs = write_docs(
        {
            "handle/disk-full.md": "# 磁盘爆满\n\n## 影响\n\n容器运行时所在的数据盘写满以后，"
            "dockerd 无响应，kubelet 日志报 PLEG unhealthy，Pod 一直 ContainerCreating，"
            "新建容器也会失败。\n\n## 恢复\n\n先清理日志文件腾出空间，再驱逐节点上的 Pod "
            "并重启 dockerd。\n",
            "pod/keep-terminating.md": "# Pod 一直处于 Terminating 状态\n\n## 磁盘爆满\n\n"
            "docker 数据目录所在磁盘满了，删除容器没有反应。\n\n## Finalizers\n\n"
            "资源带有 finalizers 时删除会卡住。\n",
            "node/pressure.md": "# 节点压力\n\nkubelet 报 disk pressure 时会驱逐 Pod；"
            "镜像下载队列 full 时拉取变慢。\n",
        }
    )
    index = KnowledgeIndex(load_documents(docs))

    hits = index.search("disk full", top_k=5).hits

    assert hits and hits[0].chunk.source == "handle/disk-full.md"


def test_a_title_counts_in_the_rank_only_when_the_query_names_most_of_it(
    write_docs: Callable[[dict[str, str]], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = write_docs({"memory-fragmentation.md": _FRAGMENTATION, "crashloop.md": _CRASHLOOP})
    index = KnowledgeIndex(load_documents(docs))

    def ranks(query: str) -> dict[str, float]:
        graded = index.grade(query)
        assert not isinstance(graded, NoEvidenceBasis)
        best: dict[str, float] = {}
        for candidate, rank in zip(graded.candidates, graded.ranks, strict=True):
            source = index.chunk(int(candidate)).source
            best[source] = max(best.get(source, 0.0), float(rank))
        return best

    with_titles = {q: ranks(q) for q in ("memory fragmentation", "pod exit codes")}
    monkeypatch.setattr(index_module, "TITLE_MIX", 0.0)
    without = {q: ranks(q) for q in with_titles}

    # Both words of `Memory fragmentation` (and of its file name) are named: it counts.
    named = with_titles["memory fragmentation"]
    assert (
        named["memory-fragmentation.md"]
        > without["memory fragmentation"]["memory-fragmentation.md"]
    )
    assert named["crashloop.md"] == without["memory fragmentation"]["crashloop.md"]
    # `pod` is one word of `Pod in CrashLoopBackOff` and its file name: it does not.
    assert with_titles["pod exit codes"] == without["pod exit codes"]


def test_a_title_that_puts_one_page_first_lowers_no_other_pages_grade(
    write_docs: Callable[[dict[str, str]], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A two-topic question keeps its second page: the margin compares a hit with the other
    # documents' ranks without their title field.
    docs = write_docs({"memory-fragmentation.md": _FRAGMENTATION, "crashloop.md": _CRASHLOOP})
    index = KnowledgeIndex(load_documents(docs))

    def qualities() -> dict[str, float]:
        graded = index.grade("memory fragmentation")
        assert not isinstance(graded, NoEvidenceBasis)
        return {
            index.chunk(int(c)).breadcrumb: float(q)
            for c, q in zip(graded.candidates, graded.quality, strict=True)
        }

    with_titles = qualities()
    monkeypatch.setattr(index_module, "TITLE_MIX", 0.0)
    without = qualities()

    section = "Pod in CrashLoopBackOff > Memory fragmentation"
    assert with_titles[section] == without[section] > 0.75
    assert (
        with_titles["Memory fragmentation > How to tell"]
        > without["Memory fragmentation > How to tell"]
    )
