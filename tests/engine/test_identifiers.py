"""Identifiers a query names, looked up whole among its corpus's terms (engine.identifiers)."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from lookup_knowledge.engine.corpus import load_documents
from lookup_knowledge.engine.identifiers import CasedNames, CorpusIdentifiers, named
from lookup_knowledge.engine.index import KnowledgeIndex, NoEvidenceBasis
from lookup_knowledge.engine.query import Known


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("how do I use PodDisruptionBudget here", ["poddisruptionbudget"]),
        ("kafka throws NOT_LEADER_OR_FOLLOWER", ["not_leader_or_follower"]),
        ("probe_ssl_earliest_cert_expiry is low", ["probe_ssl_earliest_cert_expiry"]),
        ("why does useEffect run twice", ["useeffect"]),
        ("DNSPolicy and ImagePullBackOff", ["dnspolicy", "imagepullbackoff"]),
        ("怎么用PodDisruptionBudget保证副本", ["poddisruptionbudget"]),
        ("ImagePullBackOff again: ImagePullBackOff", ["imagepullbackoff"]),
        ("kubeadm init hangs in wait-control-plane", ["wait-control-plane"]),
        ("how do I turn on --rotate-certificates", ["rotate-certificates"]),
        ("the podIPs field and CRDsList", ["podips", "crdslist"]),  # more than a plural
    ],
)
def test_camel_and_snake_case_names_are_identifiers(text: str, expected: list[str]) -> None:
    assert named(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "Kafka consumer lag on HPA",  # a capitalised word, an acronym
        "the PVCs, the pod IPs and the CRDs",  # an acronym's plural
        "the long-term store of checkout-api",  # two hyphenated words: prose, object names
        "upgrade to v1_28 of node_exporter2",  # a digit: a version, an id
        "o.h.e.j.s.SqlExceptionHelper failed",  # inside a dotted name
        "caller=pod_workers.go:191 in /var/lib/kubelet_pods/x",  # a file name, a path
        "Ab" * 60,  # a run too long to be a name (a paste, a hash)
    ],
)
def test_words_names_and_noise_are_no_identifiers(text: str) -> None:
    assert named(text) == []


def test_an_identifier_inside_a_longer_one_is_held_separators_aside() -> None:
    corpus = CorpusIdentifiers(["kernel.pid_max", "kubestatemetricsshardsmissing", "node"])

    assert corpus.holds("pid_max")
    assert corpus.holds("shardsmissing")
    assert corpus.holds("kube_state_metrics")
    assert not corpus.holds("poddisruptionbudget")


@pytest.mark.parametrize("terms", [[], ["ab", "节点", "pod"]])
def test_a_corpus_without_long_latin_terms_holds_and_abbreviates_nothing(
    terms: list[str],
) -> None:
    corpus = CorpusIdentifiers(terms)

    assert not corpus.holds("poddisruptionbudget")
    assert corpus.nearest("poddisruptionbudget") is None


def test_a_misspelt_or_shortened_identifier_stands_for_the_closest_corpus_one() -> None:
    corpus = CorpusIdentifiers(
        [
            "kubememoryovercommit",
            "kubememoryquotaovercommit",
            "kubepodcrashlooping",
            "tcp_tw_recycle",
        ]
    )

    assert corpus.nearest("kubememovercommit") == "kubememoryovercommit"
    assert corpus.nearest("kubepodcrashloopin") == "kubepodcrashlooping"
    assert corpus.nearest("tcp_tw_recyle") == "tcp_tw_recycle"
    assert corpus.nearest("poddisruptionbudget") is None
    assert corpus.nearest("memovercommit") is None  # not the same first letter


_PODS = """# Pod eviction

When a node drains, every pod on it is evicted and rescheduled; the pod budget of
replicas decides how many may go at once during the disruption.
"""
_MEMORY = """# KubeMemoryOvercommit

The cluster has overcommitted memory requests and cannot tolerate a node failure.
"""
_QUOTA = """# KubeMemoryQuotaOvercommit

The memory quota of the namespaces overcommits the cluster's memory.
"""


def _corpus(tmp_path: Path) -> KnowledgeIndex:
    for name, text in (("pods.md", _PODS), ("memory.md", _MEMORY), ("quota.md", _QUOTA)):
        (tmp_path / name).write_text(text, encoding="utf-8")
    return KnowledgeIndex(load_documents(tmp_path))


def _top(index: KnowledgeIndex, query: str) -> tuple[str, float]:
    graded = index.grade(query)
    assert not isinstance(graded, NoEvidenceBasis)
    first = int(graded.order[0])
    return index.chunk(int(graded.candidates[first])).source, float(graded.quality[first])


def test_an_identifier_the_corpus_lacks_counts_against_every_hit(tmp_path: Path) -> None:
    index = _corpus(tmp_path)
    read = index.read("node drain blocked by PodDisruptionBudget")
    absent = [c for c in read.concepts if c.known is Known.ABSENT]

    assert [c.token for c in absent] == ["poddisruptionbudget"]
    # The same words, without naming the thing the corpus lacks, grade higher.
    source, with_name = _top(index, "node drain blocked by PodDisruptionBudget")
    same_source, without = _top(index, "node drain blocked by pod disruption budget")
    assert source == same_source == "pods.md"
    assert with_name < without


def test_the_keys_of_a_structured_log_line_are_no_identifiers(tmp_path: Path) -> None:
    # `remote_name=` is the logger's schema, stripped from the line's words: it names nothing
    # the question is about, so the corpus lacking it counts for nothing either.
    index = _corpus(tmp_path)
    line = 'level=warn remote_name=3f8a1c msg="pod memory quota exceeded" pod_name=web-1'

    assert not [c for c in index.read(line).concepts if c.known is Known.ABSENT]
    assert [
        c.token for c in index.read("remote_name is wrong").concepts if c.known is Known.ABSENT
    ] == ["remote_name"]


def test_a_shortened_identifier_finds_the_page_it_stands_for(tmp_path: Path) -> None:
    index = _corpus(tmp_path)

    assert "kubememoryovercommit" in index.read("KubeMemOvercommit firing").wholes
    assert _top(index, "KubeMemOvercommit firing")[0] == "memory.md"
    assert not [c for c in index.read("KubeMemOvercommit").concepts if c.known is Known.ABSENT]


def test_a_title_identifier_typed_without_case_gets_its_case_back() -> None:
    titles = CasedNames(["KubeMemoryOvercommit", "Pod eviction", "TargetDown"])
    corpus = CorpusIdentifiers(["kubememoryovercommit", "targetdown", "pod", "eviction"])
    asked: list[str] = []

    def unknown(word: str) -> bool:
        asked.append(word)
        return word == "kubememovercommit"

    restore = functools.partial(titles.restore, nearest=corpus.nearest, unknown=unknown)
    assert restore("kubememoryovercommit firing") == "KubeMemoryOvercommit firing"
    assert restore("TARGETDOWN on api") == "TargetDown on api"
    assert restore("kubememovercommit on prod") == "KubeMemoryOvercommit on prod"
    # A word the corpus or the dictionary knows is not taken for a misspelt name.
    assert restore("kubememoryovercommits and evictionsss") == (
        "kubememoryovercommits and evictionsss"
    )
    assert asked == ["kubememovercommit", "kubememoryovercommits", "evictionsss"]
    # Written with its case, or in a path, a word is left as it is.
    assert restore("KubeMemOvercommit in /var/kubememoryovercommit") == (
        "KubeMemOvercommit in /var/kubememoryovercommit"
    )


def test_an_alert_name_typed_in_lower_case_finds_its_page_as_in_camel_case(
    tmp_path: Path,
) -> None:
    index = _corpus(tmp_path)

    for query in ("kubememoryovercommit firing", "kubememovercommit firing"):
        read = index.read(query)
        assert "kubememoryovercommit" in read.wholes
        # Read by its parts, as `KubeMemoryOvercommit` is: a page about it covers them all.
        assert {"kube", "overcommit"} <= {c.token for c in read.concepts}
        assert not [c for c in read.concepts if c.known is Known.ABSENT]
        source, quality = _top(index, query)
        assert source == "memory.md"
        assert quality == pytest.approx(_top(index, "KubeMemoryOvercommit firing")[1])


def test_only_a_word_no_dictionary_knows_is_taken_for_a_name_typed_without_case(
    tmp_path: Path,
) -> None:
    index = _corpus(tmp_path)

    # The dictionary holds stems: `earthquakes` is read as `earthquak`, an English word.
    assert not index._unknown_name("earthquakes")
    assert not index._unknown_name("unfortunately")
    assert index._unknown_name("kubememovercommit")
    assert not index._unknown_name("kubememoryovercommit")  # the corpus's own term


def test_a_word_no_dictionary_knows_is_a_name_an_english_one_is_not() -> None:
    from lookup_knowledge.engine.bilingual import Translations
    from lookup_knowledge.engine.lexicon import Lexicon

    translations = Translations([], lambda _term: False, Lexicon.load().stopwords)

    assert translations.is_name("istio")
    assert translations.is_name("pushgateway")
    assert not translations.is_name("allot")  # the stem of an English word
    assert not translations.is_name("ksm")  # too short: as often an abbreviation
    assert not translations.is_name("k8s")


_SIDECAR = """# Config reloader sidecar errors

The config reloader sidecar of the pod fails to reload and restarts again and again.
"""


def test_a_tool_the_corpus_never_mentions_weighs_more_than_an_unknown_word(
    tmp_path: Path,
) -> None:
    (tmp_path / "sidecar.md").write_text(_SIDECAR, encoding="utf-8")
    (tmp_path / "other.md").write_text("# Disk full\n\nThe disk of the node is full.\n")
    index = KnowledgeIndex(load_documents(tmp_path))

    named = index.read("istio sidecar restarts")
    assert [c.known for c in named.concepts if c.token == "istio"] == [Known.ABSENT]
    unknown = index.read("ksm sidecar restarts")
    assert [c.known for c in unknown.concepts if c.token == "ksm"] == [Known.UNKNOWN]
    assert _top(index, "istio sidecar restarts")[1] < _top(index, "ksm sidecar restarts")[1]


def test_an_english_word_the_corpus_lacks_is_no_typo_and_weighs_least(tmp_path: Path) -> None:
    (tmp_path / "sidecar.md").write_text(_SIDECAR, encoding="utf-8")
    (tmp_path / "cluster.md").write_text("# Cluster down\n\nEvery node of the cluster is down.\n")
    index = KnowledgeIndex(load_documents(tmp_path))

    def kinds(query: str) -> dict[str, Known]:
        return {c.token: c.known for c in index.read(query).concepts}

    # `counter` is one of the dictionary's English words: not a misspelt `cluster`.
    assert kinds("counter of sidecar restarts")["counter"] is Known.WORD
    assert kinds("clustr down")["clustr"] is Known.TYPO  # a real slip is still read
    # `operater` stems to `operat`, the stem of the word `operate`; but as typed it is no
    # word of the language, and it is a slip of the corpus's `operator`.
    (tmp_path / "operator.md").write_text("# Operator errors\n\nThe operator fails.\n")
    with_operator = KnowledgeIndex(load_documents(tmp_path))
    operater = {c.token: c for c in with_operator.read("operater reconcile errors").concepts}
    assert operater["operat"].known is Known.TYPO and "oper" in operater["operat"].variants
    assert kinds("yellow sidecar restarts")["yellow"] is Known.WORD
    # A word of the language says less of what is asked than an unknown token or a name.
    word = _top(index, "yellow sidecar restarts")
    unknown = _top(index, "ksm sidecar restarts")
    assert word[0] == unknown[0] == "sidecar.md"
    assert word[1] > unknown[1] > _top(index, "istio sidecar restarts")[1]
    # A Chinese idiom of the dictionary too; a word of two characters stays unknown: it is
    # as often what the question is about (`过期`, expired).
    assert kinds("时不时 sidecar restarts")["时不时"] is Known.WORD
    assert kinds("过期 sidecar restarts")["过期"] is Known.UNKNOWN
    # And a question made of such words alone finds nothing.
    assert index.grade("yellow counter") is NoEvidenceBasis.NO_CANDIDATES


def test_a_short_word_is_no_typo_when_the_language_uses_it_as_typed(tmp_path: Path) -> None:
    (tmp_path / "limits.md").write_text(
        "# Hard limits\n\nShow the best hard limits of the heap over time.\n",
        encoding="utf-8",
    )
    index = KnowledgeIndex(load_documents(tmp_path))

    def kinds(query: str) -> dict[str, Known]:
        return {c.token: c.known for c in index.read(query).concepts}

    # `west`, `shop` and `help` are common words as typed: no slips of `best`, `show`, `heap`.
    assert kinds("west heap limits")["west"] is Known.WORD
    assert kinds("shop heap limits")["shop"] is Known.WORD
    assert kinds("help heap limits")["help"] is Known.WORD
    # `tims` is a word only as the plural of `tim`, and `hepa` none: both may be slips.
    assert kinds("heap tims")["tim"] is Known.TYPO
    assert kinds("hepa limits")["hepa"] is Known.TYPO


def test_a_misspelt_stopword_is_a_stopword_not_a_name(tmp_path: Path) -> None:
    from lookup_knowledge.engine.lexicon import Lexicon

    lexicon = Lexicon.load()
    assert lexicon.misspelt_stopword("becuase") == "because"
    assert lexicon.misspelt_stopword("shoud") == "should"
    assert lexicon.misspelt_stopword("istio") is None
    assert lexicon.misspelt_stopword("ecause") is None  # the first letter is kept

    (tmp_path / "sidecar.md").write_text(_SIDECAR, encoding="utf-8")
    index = KnowledgeIndex(load_documents(tmp_path))
    read = index.read("sidecar restarts becuase of the reloader")
    assert "becuas" not in {c.token for c in read.concepts}
    assert not [c for c in read.concepts if c.known is Known.ABSENT]
    assert _top(index, "sidecar restarts becuase of the reloader")[1] == pytest.approx(
        _top(index, "sidecar restarts because of the reloader")[1]
    )


def test_a_deployment_lists_its_own_service_names_as_stopwords(tmp_path: Path) -> None:
    from lookup_knowledge.engine.lexicon import Lexicon

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "sidecar.md").write_text(_SIDECAR, encoding="utf-8")
    (docs / ".lexicon").mkdir()
    (docs / ".lexicon" / "stopwords.txt").write_text("paymentsvc\n", encoding="utf-8")
    plain = KnowledgeIndex(load_documents(docs))
    extended = KnowledgeIndex(load_documents(docs), Lexicon.load(docs))
    query = "paymentsvc sidecar restarts"

    assert [c.token for c in plain.read(query).concepts if c.known is Known.ABSENT] == [
        "paymentsvc"
    ]
    assert not [c for c in extended.read(query).concepts if c.known is Known.ABSENT]
    assert _top(extended, query)[1] > _top(plain, query)[1]
