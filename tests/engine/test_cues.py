"""Set-up questions: the phrases that tell them (`engine.cues`) and the grade they get."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from lookup_knowledge.engine import scoring
from lookup_knowledge.engine.corpus import load_documents
from lookup_knowledge.engine.cues import Cues
from lookup_knowledge.engine.index import KnowledgeIndex
from lookup_knowledge.engine.lexicon import Lexicon
from lookup_knowledge.engine.scoring import Level

CUES = Cues.of_lines(["how to  # a comment", "configur*", "example", "set up", "配置", "", "# x"])


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("How To enable it", True),  # case and spacing do not matter
        ("how\tto", True),
        ("reconfiguring the exporter", False),  # a phrase starts at a word's edge
        ("configuration of the exporter", True),  # a trailing `*` lets the last word go on
        ("two examples", False),  # without one, the word ends where the phrase does
        ("an example", True),
        ("setup", False),
        ("set  up the sidecar", True),
        ("Ｓｅｔ ｕｐ", True),  # read in NFKC
        ("prometheus 怎么配置告警", True),  # a Chinese phrase anywhere
        ("mode配置", True),
        ("nothing of the kind", False),
    ],
)
def test_a_phrase_is_said_as_whole_words_or_anywhere_in_chinese(text: str, said: bool) -> None:
    assert CUES.said(text) is said


def test_no_phrase_is_never_said() -> None:
    assert Cues.of_lines(["# only a comment", "  ", "*"]).said("anything at all") is False


def test_a_later_line_takes_a_phrase_or_every_one_out() -> None:
    assert Cues.of_lines(["how to", "set up", "- how  to"]).phrases == ("set up",)
    assert Cues.of_lines(["how to", "set up", "-*", "tune the"]).phrases == ("tune the",)
    assert Cues.of_lines(["how to", "-*"]).said("how to do it") is False


def _index(write_docs: Callable[[dict[str, str]], Path], extra: dict[str, str]) -> KnowledgeIndex:
    docs = write_docs(
        {
            "retention.md": (
                "# TSDB compactions failing\n\nPrometheus keeps its data for the retention "
                "time of its storage flag; the TSDB compacts old blocks.\n"
            ),
            "buffers.md": (
                "# Tuning proxy buffers\n\nRaise proxy_buffer_size when the upstream sends "
                "large headers.\n"
            ),
            "disk.md": "# Disk full\n\nThe disk is full: no space left on device.\n",
            **extra,
        }
    )
    return KnowledgeIndex(load_documents(docs), Lexicon.load(docs))


def test_a_set_up_question_without_a_symptom_is_graded_reference_at_most(
    write_docs: Callable[[dict[str, str]], Path],
) -> None:
    index = _index(write_docs, {})

    def top(query: str) -> tuple[str, Level | None, float]:
        hit = index.search(query, top_k=5).hits[0]
        return hit.chunk.source, hit.level, hit.quality_score

    asked = "how do I change the prometheus storage retention time of the TSDB data"
    said = "prometheus storage retention time of the TSDB data"
    failing = "how do I fix the prometheus storage retention time of the TSDB data failing"
    assert top(said)[:2] == ("retention.md", Level.PRECISE)
    assert top(asked) == ("retention.md", Level.REFERENCE, scoring.SET_UP_CAP)
    assert top(failing)[:2] == ("retention.md", Level.PRECISE)  # a symptom: graded as ever
    # A page whose heading is what the question asks to do is about that very task.
    assert top("how to tune the proxy buffers")[:2] == ("buffers.md", Level.PRECISE)


def test_a_deployment_of_set_up_guides_turns_the_cap_off(
    write_docs: Callable[[dict[str, str]], Path],
) -> None:
    index = _index(write_docs, {".lexicon/tasks.txt": "-*\n"})
    asked = "how do I change the prometheus storage retention time of the TSDB data"

    assert index.search(asked, top_k=5).hits[0].level is Level.PRECISE


def test_a_deployment_adds_set_up_and_symptom_phrases_next_to_its_docs(
    write_docs: Callable[[dict[str, str]], Path],
) -> None:
    index = _index(
        write_docs,
        {".lexicon/tasks.txt": "tune the\n", ".lexicon/symptoms.txt": "how do i change\n"},
    )
    asked = "how do I change the prometheus storage retention time of the TSDB data"
    tuned = "tune the prometheus storage retention time of the TSDB data"

    assert index.search(asked, top_k=5).hits[0].level is Level.PRECISE
    assert index.search(tuned, top_k=5).hits[0].level is Level.REFERENCE
