"""Phrases that say what kind of question a query is, read on its text (`data/tasks.txt`,
`data/symptoms.txt` and a deployment's own).

A troubleshooting page answers what is wrong and what to do about it. A question that asks
how to set something up, with no symptom in it (`how do I enable the remote write
receiver`, `kube-proxy 想从 iptables 模式切到 ipvs`), is answered precisely by a product's
own documentation more often than by a runbook that happens to share its words: the engine
grades it at most `REFERENCE` (docs/retrieval.md#a-set-up-question).

A phrase is one per line, its words separated by spaces, matched case-insensitively on the
query's NFKC form: a Latin phrase as whole words (`example` is not `examples`), where a
trailing `*` lets its last word go on (`configur*` is `configure`, `configuring`,
`configuration`); a Chinese phrase anywhere in the text. `#` starts a comment. A line `-phrase`
takes a phrase of the lines before it out (a deployment's file takes a shipped one out), and
`-*` every one of them (a corpus of set-up guides: `-*` in `.lexicon/tasks.txt` turns the cap
off).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

_LATIN = re.compile(r"[a-z0-9]")
_NEVER = re.compile(r"(?!)")


@dataclass(frozen=True, slots=True)
class Cues:
    """One list of phrases, as one pattern."""

    phrases: tuple[str, ...] = ()
    pattern: re.Pattern[str] = _NEVER

    @classmethod
    def of_lines(cls, lines: Iterable[str]) -> Cues:
        kept: dict[str, None] = {}
        for line in lines:
            phrase = " ".join(unicodedata.normalize("NFKC", line.split("#", 1)[0]).lower().split())
            if phrase == "-*":
                kept.clear()
            elif phrase.startswith("-"):
                kept.pop(phrase[1:].strip(), None)
            elif phrase.rstrip("*").strip():
                kept[phrase] = None
        if not kept:
            return cls()
        return cls(tuple(kept), re.compile("|".join(map(_pattern, kept))))

    def said(self, text: str) -> bool:
        """Whether `text` says one of the phrases."""
        return self.pattern.search(unicodedata.normalize("NFKC", text).lower()) is not None


def _pattern(phrase: str) -> str:
    open_ended = phrase.endswith("*")
    words = phrase.rstrip("*").split()
    body = r"\s+".join(map(re.escape, words)) + (r"[a-z0-9]*" if open_ended else "")
    # A Latin phrase starts and ends at a word's edge; a Chinese one is found anywhere.
    before = r"(?<![a-z0-9])" if _LATIN.match(words[0][0]) else ""
    after = r"(?![a-z0-9])" if _LATIN.match(words[-1][-1]) else ""
    return before + body + after
