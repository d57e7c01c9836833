"""CJK character bigrams in the order of the hits, and whole identifiers naming a title."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lookup_knowledge.engine import index as index_module
from lookup_knowledge.engine import ngrams, tokenize
from lookup_knowledge.engine.corpus import load_documents
from lookup_knowledge.engine.index import KnowledgeIndex, NoEvidenceBasis
from lookup_knowledge.engine.ngrams import ChunkBigrams, bigrams
from lookup_knowledge.engine.query import Concept, Known

WriteDocs = Callable[[dict[str, str]], Path]


def _bigrams_of(texts: list[str]) -> ChunkBigrams:
    """Each text a chunk of its own document, joined as the index joins them."""
    starts = np.cumsum([0, *(len(t) + 1 for t in texts)])
    return ChunkBigrams("\0".join(texts) + "\0", starts, np.arange(len(texts)), len(texts))


def test_bigrams_are_the_adjacent_pairs_of_each_cjk_run() -> None:
    assert bigrams("容器抓包 kubectl 定位，问题") == ["容器", "器抓", "抓包", "定位", "问题"]
    assert bigrams("kube 全角") == ["全角"]
    assert bigrams("no cjk here, 一") == []
    assert bigrams("") == []


def test_a_short_query_reads_the_same_bigram_terms_as_a_long_text(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    index = _bigrams_of(["容器抓包定位", "网络抓包，问题定位", "\U00020000\U00020001 扩展"])
    queries = ["容器里抓包 定位问题", "抓包抓包", "no cjk", "网络\uff0c问题", "容器"]
    short = [index.terms(q) for q in queries]
    monkeypatch.setattr(ngrams, "SHORT_TEXT", 0)  # every query through the long texts' path

    assert [index.terms(q) for q in queries] == short
    assert short[0] and short[1] == index.terms("抓包") and short[2] == []


def test_a_pair_across_two_blocks_of_a_long_text_is_found_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    text = "ab网络抓包x容器\0抓包"
    whole = bigrams(text)
    monkeypatch.setattr(ngrams, "_BLOCK", 3)

    assert bigrams(text) == whole == ["网络", "络抓", "抓包", "容器", "抓包"]


def test_a_chunk_holding_more_of_the_querys_bigrams_ranks_higher() -> None:
    pairs = _bigrams_of(["网络抓包", "抓包网络", "kubectl logs"])

    terms = pairs.terms("网络抓包 工具")  # 络抓 only in the first; 包工, 工具 in none
    rank = pairs.rank(terms, 0.3)

    assert len(terms) == 3
    assert rank[0] > rank[1] > rank[2] == 0.0
    # No pair spans two chunks (`包` + `抓` of the next): the separator is no CJK character.
    assert pairs.terms("包抓") == []
    assert pairs.terms("kubectl logs") == []


def test_a_latin_corpus_has_no_bigrams() -> None:
    pairs = _bigrams_of(["redis memory", "nginx timeout"])

    assert pairs.empty
    assert pairs.terms("网络抓包") == []


_TEXTS = ["容器抓包定位", "网络抓包，问题定位", "kubectl logs 容器日志"]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="容器抓包定位网络问题日志内存x", min_size=2, max_size=6))
def test_the_chunks_holding_a_words_pairs_hold_every_chunk_holding_it(word: str) -> None:
    """`chunks_holding` may hold more chunks than the word's, never fewer, and exactly the
    word's for a word of two characters (so `KnowledgeIndex._in_text` looks only there)."""
    pairs = _bigrams_of(_TEXTS)
    holding = {i for i, text in enumerate(_TEXTS) if word in text}
    candidates = set(pairs.chunks_holding(word).tolist()) if tokenize.is_cjk_word(word) else None
    if candidates is not None:
        assert holding <= candidates
        if len(word) == 2:
            assert holding == candidates


def test_the_chunks_holding_every_pair_of_a_word() -> None:
    pairs = _bigrams_of(_TEXTS)

    assert pairs.chunks_holding("抓包定位").tolist() == [0]  # 包定 only in the first
    assert pairs.chunks_holding("容器").tolist() == [0, 2]
    assert pairs.chunks_holding("抓包").tolist() == [0, 1]
    assert _bigrams_of(["抓包，包定位"]).chunks_holding("抓包定位").tolist() == [0]  # not the word
    assert pairs.chunks_holding("包容").tolist() == []  # across two chunks: no pair of any
    assert pairs.chunks_holding("内存").tolist() == []
    assert _bigrams_of(["redis memory"]).chunks_holding("内存").tolist() == []
    assert pairs.chunks_holding("包").tolist() == [0, 1, 2]  # no pair: any chunk may


def test_the_index_finds_a_chinese_word_verbatim_as_a_scan_would(write_docs: WriteDocs) -> None:
    index = KnowledgeIndex(
        load_documents(
            write_docs(
                {
                    "a.md": "# 抓包\n\n容器里抓包定位问题。\n",
                    "b.md": "# 日志\n\n看日志。\n",
                    "c.md": "# 网络\n\n网络，络抓包，抓包。\n",  # every pair of 网络抓包, not it
                }
            )
        )
    )

    words = ("里抓包", "包定", "抓包定位问题", "定位日志", "日志抓包", "问题。", "抓包", "网络抓包")
    for word in words:
        assert index._in_text(word) == (word in index._text), word
    for word in ("抓包", "里抓包", "网络抓包"):
        verbatim = index._verbatim(Concept(word, (), Known.SUBSTRING))
        assert verbatim is not None
        assert verbatim.tolist() == [
            word in tokenize.normalize(index.chunk(i).content) for i in range(index.chunk_count)
        ], word


def _ranked(index: KnowledgeIndex, query: str) -> list[tuple[str, float, float]]:
    graded = index.grade(query)
    assert not isinstance(graded, NoEvidenceBasis)
    return [
        (
            index.chunk(int(graded.candidates[i])).source,
            float(graded.ranks[i]),
            float(graded.quality[i]),
        )
        for i in graded.order.tolist()
    ]


def test_bigrams_break_a_tie_of_the_words_toward_the_page_that_says_them_in_order(
    write_docs: WriteDocs, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Both pages hold the same words the same number of times; only the first says them in
    # the question's order. In corpus order it comes second.
    docs = write_docs(
        {
            "a-tools.md": "# 工具\n\n抓包网络，工具齐全。\n",
            "b-capture.md": "# 工具\n\n网络抓包，工具齐全。\n",
        }
    )
    index = KnowledgeIndex(load_documents(docs))

    with_bigrams = _ranked(index, "网络抓包")
    monkeypatch.setattr(index_module, "BIGRAM_MIX", 0.0)
    without = _ranked(index, "网络抓包")

    assert [s for s, _, _ in with_bigrams] == ["b-capture.md", "a-tools.md"]
    assert without[0][1] == without[1][1]  # the words alone tie
    assert [s for s, _, _ in without] == ["a-tools.md", "b-capture.md"]
    # The grade reads the words' rank only: bigrams move no quality.
    assert sorted(q for _, _, q in with_bigrams) == sorted(q for _, _, q in without)


_SCHEDULER = (
    "# KubeSchedulerDown\n\n## Meaning\n\nKube Scheduler has disappeared from Prometheus "
    "target discovery.\n\n## Impact\n\nNew pods stay Pending.\n"
)
_ETCD = (
    "# etcdMembersDown\n\n## Meaning\n\nAn etcd member is down. Masters rebooted one by one "
    "after a control plane patch, the static pod manifest in /etc/kubernetes/manifests.\n"
)


def test_a_whole_identifier_names_the_title_that_holds_it(
    write_docs: WriteDocs, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Its parts are common words of the corpus, the whole is rare: the parts alone are not
    # two thirds of the title's weight.
    docs = write_docs(
        {
            "KubeSchedulerDown.md": _SCHEDULER,
            "etcdMembersDown.md": _ETCD,
            "KubeProxyDown.md": "# KubeProxyDown\n\nKube proxy is down on a node.\n",
            "KubeletDown.md": "# KubeletDown\n\nThe kube kubelet is down.\n",
            "SchedulerLatency.md": "# Kube scheduler latency\n\nThe scheduler is slow.\n",
        }
    )
    index = KnowledgeIndex(load_documents(docs))
    query = "the alert KubeSchedulerDown fired"

    def best(source: str) -> float:
        return max(r for s, r, _ in _ranked(index, query) if s == source)

    with_title = best("KubeSchedulerDown.md")
    monkeypatch.setattr(index_module, "TITLE_MIX", 0.0)

    assert with_title > best("KubeSchedulerDown.md")


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 5), st.integers(0, 0x110000**2 - 1)), min_size=0, max_size=40)
)
def test_the_pairs_of_a_corpus_too_large_for_one_key_count_the_same(
    entries: list[tuple[int, int]],
) -> None:
    """`_counted` of a corpus of more chunks than one key holds sorts by chunk, then pair:
    the same (chunk, pair, count)s as the one key."""
    entries.sort(key=lambda entry: entry[0])  # pairs come in text order: chunks ascending
    unit = np.array([u for u, _ in entries], dtype=np.int64)
    keys = np.array([k for _, k in entries], dtype=np.int64)

    one_key = ngrams._counted(unit, keys, 6)
    by_parts = ngrams._counted(unit, keys, 1 << 30)

    for a, b in zip(one_key, by_parts, strict=True):
        assert a.tolist() == b.tolist()
    assert sum(one_key[2].tolist()) == len(entries)
