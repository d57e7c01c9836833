"""The ops thesaurus (`engine/data/thesaurus.txt`): lay words bridged to the documents' terms."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lookup_knowledge.engine import scoring
from lookup_knowledge.engine.corpus import load_documents
from lookup_knowledge.engine.index import Graded, KnowledgeIndex, NoEvidenceBasis
from lookup_knowledge.engine.lexicon import Bridge, Lexicon, positions
from lookup_knowledge.engine.query import Known

LEXICON = Lexicon.load()
WITHOUT = dataclasses.replace(LEXICON, bridges=())

RUNBOOKS = {
    "kubelet-down.md": "# KubeletDown\n\nThe kubelet on a node stopped reporting to the API "
    "server. Check the kubelet service and its logs.\n",
    "node-exporter.md": "# NodeExporterDown\n\nThe node exporter agent on a node is not "
    "scraped. Check the exporter agent pod.\n",
    "watchdog.md": "# Watchdog\n\nAn alert that always fires, to prove that the alerting "
    "pipeline works end to end.\n",
    "disk.md": "# Disk full\n\nThe filesystem is full: no space left on device.\n",
}


def test_the_shipped_thesaurus_parses_and_every_expression_can_match() -> None:
    assert LEXICON.unusable_bridges == ()
    assert len(LEXICON.bridges) >= 500  # a few hundred lines, several expressions each
    by_words = {b.words: b.terms for b in LEXICON.bridges if b.words}
    assert "kubelet" in by_words[("node", "agent")]
    assert "watchdog" in by_words[("dead", "man", "switch")]
    chinese = {b.verbatim: b.terms for b in LEXICON.bridges if b.verbatim}
    assert "termin" in chinese["删不掉"]  # terminating, stemmed


@pytest.mark.parametrize(
    "topic", [("rule", "evalu"), ("record", "rule"), ("notif", "queue"), ("disk", "space")]
)
def test_a_topic_alone_is_no_lay_expression_of_a_symptom(topic: tuple[str, ...]) -> None:
    # `rule evaluation` names what a question is about, not what went wrong with it: as a
    # bridge to `missing` it ranked the missed-evaluations page over the rule-failures one
    # for `rule evaluation failures`.
    assert all(b.words != topic for b in LEXICON.bridges)


def test_several_words_that_read_as_one_are_unusable(
    write_docs: Callable[[dict[str, str]], Path],
) -> None:
    docs = write_docs(
        {
            "a.md": "# Pending pods\n\nA pod stays pending.\n",
            ".lexicon/thesaurus.txt": "not scheduled, cannot schedule = pending\nno terms =\n",
        }
    )

    lexicon = Lexicon.load(docs)

    # "not scheduled" is `schedul` alone (`not` is a stopword): it would match far more
    # than it says. A line without a technical side bridges to nothing.
    assert lexicon.unusable_bridges == ("not scheduled", "no terms =")
    assert Bridge(("cannot", "schedul"), "", ("pend",)) in lexicon.bridges


@pytest.mark.parametrize(
    ("sequence", "matches"),
    [
        (["node", "agent", "down"], True),
        (["agent", "node"], False),  # in order only
        (["node", "our", "big", "agent"], True),  # two words between at most
        (["node", "our", "big", "old", "agent"], False),
    ],
)
def test_a_lay_expression_matches_its_words_in_order_close_together(
    sequence: list[str], matches: bool
) -> None:
    assert Bridge(("node", "agent"), "", ("kubelet",)).matches(positions(sequence), "") is matches


def _matches_by_scanning(words: tuple[str, ...], sequence: list[str]) -> bool:
    """The rule as first written: every start scanned, each next word by `list.index`."""
    from lookup_knowledge.engine.lexicon import GAP

    for start, token in enumerate(sequence):
        if token != words[0]:
            continue
        place, reach = start, start + len(words) + GAP
        for word in words[1:]:
            try:
                place = sequence.index(word, place + 1, reach)
            except ValueError:
                break
        else:
            return True
    return False


@settings(max_examples=500, deadline=None)
@given(
    st.lists(st.sampled_from("abcd"), min_size=1, max_size=4),
    st.lists(st.sampled_from("abcde"), max_size=12),
)
def test_a_lay_expression_is_matched_by_its_places_as_by_scanning(
    words: list[str], sequence: list[str]
) -> None:
    bridge = Bridge(tuple(words), "", ("kubelet",))
    assert bridge.matches(positions(sequence), "") is _matches_by_scanning(tuple(words), sequence)


def test_a_chinese_expression_matches_verbatim_whatever_the_segmenter_did() -> None:
    bridge = Bridge((), "删不掉", ("terminating",))

    assert bridge.matches({}, "pod删不掉了怎么办")
    assert not bridge.matches(positions(["删", "掉"]), "pod删掉了")


def test_the_chinese_expressions_a_text_says_come_in_file_order() -> None:
    chinese = [Bridge((), chr(0x4E00 + 2 * i) + chr(0x4E01 + 2 * i), ("t",)) for i in range(12)]
    lexicon = Lexicon(frozenset(), (), tuple(chinese))
    text = f"先{chinese[8].verbatim}再{chinese[3].verbatim}"  # said last to first

    assert lexicon.said([], text) == [chinese[3], chinese[8]]
    assert lexicon.said([], "no chinese here") == []
    shipped = [b for b in LEXICON.bridges if b.verbatim]
    said = "，".join(b.verbatim for b in reversed(shipped[::7]))
    assert LEXICON.said([], said) == [b for b in shipped if b.verbatim in said]


def test_an_entry_bridges_a_lay_question_to_the_runbook_that_uses_the_term(
    write_docs: Callable[[dict[str, str]], Path],
) -> None:
    docs = write_docs(RUNBOOKS)
    query = "node agent stopped reporting on every worker"

    bridged = KnowledgeIndex(load_documents(docs), LEXICON)
    plain = KnowledgeIndex(load_documents(docs), WITHOUT)

    read = {c.token: c for c in bridged.read(query).concepts}
    assert read["agent"].bridges == ("kubelet",) and read["agent"].known is Known.KNOWN
    assert bridged.search(query, top_k=3).hits[0].chunk.source == "kubelet-down.md"
    assert plain.search(query, top_k=3).no_evidence_basis is NoEvidenceBasis.ALL_BELOW_THRESHOLD


def test_a_match_through_the_thesaurus_alone_stays_below_precise(
    write_docs: Callable[[dict[str, str]], Path],
) -> None:
    index = KnowledgeIndex(load_documents(write_docs(RUNBOOKS)), LEXICON)
    query = "dead man's switch alert"

    graded = index.grade(query)
    hits = index.search(query, top_k=3).hits

    assert isinstance(graded, Graded)
    # The bridged features alone would grade it PRECISE; the thesaurus may lift a grade
    # to REFERENCE at most.
    assert float(scoring.quality(graded.features).max()) >= scoring.PRECISE_THRESHOLD
    assert hits[0].chunk.source == "watchdog.md"
    assert hits[0].level is scoring.Level.REFERENCE
    assert hits[0].quality_score == scoring.BRIDGED_CAP


def test_a_query_of_bridged_words_alone_has_no_candidates(
    write_docs: Callable[[dict[str, str]], Path],
) -> None:
    index = KnowledgeIndex(load_documents(write_docs(RUNBOOKS)), LEXICON)

    read = index.read("dead man's switch")
    result = index.search("dead man's switch", top_k=3)

    assert {c.known for c in read.concepts} == {Known.BRIDGED}
    assert result.no_evidence_basis is NoEvidenceBasis.NO_CANDIDATES


def test_the_thesaurus_never_lowers_a_grade_the_query_earns_by_itself(
    write_docs: Callable[[dict[str, str]], Path],
) -> None:
    docs = write_docs(RUNBOOKS)
    query = "disk full no space left on the attached disk"  # "attached disk" is bridged

    bridged = KnowledgeIndex(load_documents(docs), LEXICON).search(query, top_k=3).hits
    plain = KnowledgeIndex(load_documents(docs), WITHOUT).search(query, top_k=3).hits

    assert bridged[0].chunk.source == plain[0].chunk.source == "disk.md"
    assert bridged[0].quality_score >= plain[0].quality_score >= scoring.PRECISE_THRESHOLD


def test_a_deployment_extends_the_thesaurus_next_to_its_docs(
    write_docs: Callable[[dict[str, str]], Path],
) -> None:
    docs = write_docs(
        {
            "frob.md": "# Frobnicator stalls\n\nThe frobnicator stalls when its queue is full.\n",
            "other.md": "# Widget colours\n\nWidgets come in many colours.\n",
            ".lexicon/thesaurus.txt": "# ours\nwidget grinder, 磨盘 = frobnicator\n",
        }
    )
    lexicon = Lexicon.load(docs)
    index = KnowledgeIndex(load_documents(docs), lexicon)

    assert any(b.terms == ("frobnic",) for b in lexicon.bridges)
    assert not any(b.terms == ("frobnic",) for b in LEXICON.bridges)
    assert index.search("the widget grinder stalls", top_k=3).hits[0].chunk.source == "frob.md"
    read = {c.token: c for c in index.read("磨盘 stalls").concepts}
    assert read["磨盘"].bridges == ("frobnic",) and read["磨盘"].known is Known.BRIDGED


def test_an_expression_with_a_word_the_corpus_drops_as_an_id_still_bridges(
    write_docs: Callable[[dict[str, str]], Path],
) -> None:
    docs = write_docs(
        {
            "oom.md": "# OOMKilled\n\nThe container was OOM killed: its memory limit is too low.\n",
            "disk.md": RUNBOOKS["disk.md"],
        }
    )
    index = KnowledgeIndex(load_documents(docs), LEXICON)

    # `137` is unknown here, so no concept ("exit code 137 = 137, oom, kill").
    read = {c.token: c for c in index.read("container exit code 137 again").concepts}
    hits = index.search("container exit code 137 again", top_k=3).hits

    assert "137" not in read and "oom" in read["exit"].bridges
    assert hits[0].chunk.source == "oom.md"


def test_english_lay_words_reach_a_chinese_page_through_its_own_terms(
    write_docs: Callable[[dict[str, str]], Path],
) -> None:
    docs = write_docs(
        {
            "eviction.md": "# 驱逐导致服务中断\n\n驱逐故障节点上的 pod 之后，业务中断了十分钟。\n",
            "disk.md": "# 磁盘爆满\n\n容器运行时的数据目录所在磁盘被写满。\n",
            "dns.md": "# DNS 解析异常\n\n解析外部域名超时，先看 coredns 的日志。\n",
        }
    )
    query = "outage after draining a node"

    bridged = KnowledgeIndex(load_documents(docs), LEXICON)
    plain = KnowledgeIndex(load_documents(docs), WITHOUT)

    read = {c.token: c for c in bridged.read(query).concepts}
    assert "驱逐" in read["drain"].bridges  # the page's own word, not an English one
    assert bridged.search(query, top_k=3).hits[0].chunk.source == "eviction.md"
    assert not any(h.chunk.source == "eviction.md" for h in plain.search(query, top_k=3).hits)


def test_a_colloquial_chinese_question_reaches_the_bundled_english_runbook() -> None:
    documents = load_documents()
    query = "连接池满了怎么办"

    bridged = KnowledgeIndex(documents, LEXICON).search(query, top_k=3)
    plain = KnowledgeIndex(documents, WITHOUT).search(query, top_k=3)

    assert bridged.hits[0].chunk.source == "database/connection-pool.md"
    assert bridged.hits[0].level is scoring.Level.REFERENCE
    assert plain.no_evidence_basis is NoEvidenceBasis.ALL_BELOW_THRESHOLD
