"""Acronyms the corpus defines itself (`engine.acronyms`): found, and used by queries."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from lookup_knowledge.engine.acronyms import Acronyms, CorpusAcronyms, find_acronyms
from lookup_knowledge.engine.corpus import load_documents
from lookup_knowledge.engine.index import Graded, KnowledgeIndex
from lookup_knowledge.engine.lexicon import Lexicon

STOPWORDS = Lexicon.load().stopwords
HPA = ("horizont", "pod", "autoscal")
CRI = "Container Runtime Interface (CRI)."


def expansions(*texts: str) -> dict[str, tuple[str, ...]]:
    found = find_acronyms(texts, STOPWORDS)
    return {token: found.expansion(token) for token in ("hpa", "oom", "apf", "pvc", "cri", "http")}


@pytest.mark.parametrize(
    ("text", "acronym", "expansion"),
    [
        (
            "Scale it with the Horizontal Pod Autoscaler (HPA).",
            "hpa",
            ("horizont", "pod", "autoscal"),
        ),
        ("HPA (horizontal pod autoscaler) adds replicas.", "hpa", ("horizont", "pod", "autoscal")),
        ("The kernel's OOM (out of memory) killer.", "oom", ("out", "memori")),
        ("API Priority and Fairness (APF) rejects requests.", "apf", ("api", "prioriti", "fair")),
        ("A PersistentVolumeClaim (PVC) is bound.", "pvc", ("persist", "volum", "claim")),
    ],
    ids=["before", "after", "function word spelled", "function word left out", "identifier parts"],
)
def test_an_acronym_is_read_from_its_definition_next_to_it(
    text: str, acronym: str, expansion: tuple[str, ...]
) -> None:
    assert expansions(text)[acronym] == expansion


def test_initials_that_only_happen_to_spell_an_acronym_elsewhere_are_no_definition() -> None:
    found = expansions("Every HTTP client. Tell the pool to recycle, then check the CRI logs.")

    assert found["http"] == ()
    assert found["cri"] == ()


def test_the_definition_the_corpus_uses_most_wins() -> None:
    found = expansions(
        "Container Runtime Interface (CRI).",
        "Container Runtime Interface (CRI).",
        "Crio Rust Io (CRI).",
    )

    assert found["cri"] == ("contain", "runtim", "interfac")


def test_a_query_names_an_acronym_with_all_words_of_its_expansion_but_one() -> None:
    acronyms = Acronyms({"hpa": HPA, "pv": ("persist", "volum")})

    assert acronyms.named(["pod", "autoscal", "max"]) == ["hpa"]
    assert acronyms.named(["horizont", "pod", "autoscal"]) == ["hpa"]
    assert acronyms.named(["autoscal", "max"]) == []  # one word of three
    assert acronyms.named(["volum", "full"]) == []  # one word of two
    assert acronyms.named(["hpa", "pod", "autoscal"]) == []  # named already


def corpus(write_docs: Callable[[dict[str, str]], Path]) -> KnowledgeIndex:
    """The page titled by the acronym, a glossary that defines it, and unrelated pages."""
    files = {
        "hpa.md": "# KubeHpaMaxedOut\n\nThe HPA has been at its max replicas for 15 minutes.\n",
        "glossary.md": (
            "# Glossary\n\nA pod runs containers on a node. A deployment keeps replicas of a "
            "pod. The Horizontal Pod Autoscaler (HPA) changes the replicas of a workload from "
            "its metrics. A service routes traffic to pods. A namespace groups objects.\n"
        ),
        "quota.md": "# Pod quota\n\nThe pod count of the namespace is over its quota.\n",
    }
    for topic in ("disk full", "dns lookups", "kafka lag", "tls certificate", "etcd leader"):
        files[f"{topic.replace(' ', '-')}.md"] = f"# {topic}\n\nThe {topic} runbook.\n"
    return KnowledgeIndex(load_documents(write_docs(files)))


def test_a_query_in_the_words_of_an_expansion_finds_the_page_titled_by_its_acronym(
    write_docs: Callable[[dict[str, str]], Path],
) -> None:
    index = corpus(write_docs)

    read = index.read("the pod autoscaler is stuck at its max")
    graded = index.grade("the pod autoscaler is stuck at its max")

    assert "hpa" in read.wholes
    assert [c.token for c in read.concepts] == ["pod", "autoscal", "stuck", "max"]  # as before
    assert isinstance(graded, Graded)
    first = index.chunk(int(graded.candidates[graded.order[0]]))
    assert first.source == "hpa.md"


def test_a_query_naming_an_acronym_also_names_its_expansion(
    write_docs: Callable[[dict[str, str]], Path],
) -> None:
    read = corpus(write_docs).read("HPA keeps flapping")

    assert set(HPA) <= set(read.wholes)


def test_a_corpus_is_read_for_its_acronyms_once_and_a_failure_reaches_the_query() -> None:
    reads: list[int] = []

    def texts() -> list[str]:
        reads.append(1)
        return ["The Horizontal Pod Autoscaler (HPA) scales pods."]

    acronyms = CorpusAcronyms(texts, STOPWORDS)

    assert acronyms.get().expansion("hpa") == HPA
    assert acronyms.get().expansion("hpa") == HPA
    assert len(reads) == 1

    def broken() -> list[str]:
        raise OSError("unreadable")

    failing = CorpusAcronyms(broken, STOPWORDS)
    for _ in range(2):  # not cached as "no acronyms": every query sees the failure
        with pytest.raises(OSError, match="unreadable"):
            failing.get()
