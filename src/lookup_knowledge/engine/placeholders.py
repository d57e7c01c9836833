"""Chunks that hold no text of their own: a placeholder where a section is yet to be written.

Runbook collections are often written section by section, and a section nobody has written
yet says `TODO`, `To be added.` or `待补充`; a folder's index page may hold nothing but a
template shortcode that lists its children (`{{% children depth=2 %}}`). Such a chunk carries
its heading's words (`KubeletPlegDurationHigh > Mitigation`), so a question that names the
heading finds it, graded as well as the section it asks for, and the agent is handed `TODO`
as evidence, in a slot a real chunk could have had. The index leaves these chunks out
(docs/retrieval.md#chunking); the documents keep them, so their ids do not change.

A chunk is a placeholder when its text, with template shortcodes, template tags, HTML
comments and every mark that is not a letter or a digit taken out, is empty, or is one of the
placeholder phrases (`data/placeholders.txt` and a deployment's own), alone or followed by a
note of at most `NOTE_MAX_CHARS` characters, a Chinese character counting as three (`TODO
优化`, `TODO: fill in`; not `暂无。可先扩容节点`, which says what to do).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field

from lookup_knowledge.engine import tokenize

NOTE_MAX_CHARS = 12  # `TODO: fill in`, `TODO 优化`; a longer note says something
_TEMPLATE = re.compile(r"\{\{[%<].*?[%>]\}\}|\{%.*?%\}|<!--.*?-->", re.DOTALL)
_MARKS = re.compile(r"[\W_]+")
_CJK = re.compile(f"[{tokenize.CJK_CLASS}]")
# A text longer than this many times a phrase and its note, with no template or comment, holds
# more than markup around them (`**TODO**`, `> _To be added._`).
_MARKUP_SHARE = 4


def bare(text: str) -> str:
    """The letters and digits of `text`, lowercased, in words separated by single spaces,
    its template shortcodes and comments left out."""
    plain = _TEMPLATE.sub(" ", unicodedata.normalize("NFKC", text))
    return _MARKS.sub(" ", plain).strip().lower()


@dataclass(frozen=True, slots=True)
class Placeholders:
    """The placeholder phrases, as `bare` reads them (`data/placeholders.txt` and a
    deployment's own)."""

    phrases: frozenset[str] = frozenset()
    longest: int = field(init=False, compare=False)  # a phrase and its note, at most

    def __post_init__(self) -> None:
        longest = max(map(len, self.phrases), default=0) + 1 + NOTE_MAX_CHARS
        object.__setattr__(self, "longest", longest)

    @classmethod
    def of_lines(cls, lines: Iterable[str]) -> Placeholders:
        """The phrases of a file's lines, one per line ('#' starts a comment)."""
        found = (bare(line.split("#", 1)[0]) for line in lines)
        return cls(frozenset(p for p in found if p))

    def __contains__(self, phrase: object) -> bool:
        return phrase in self.phrases

    def match(self, text: str) -> bool:
        """Whether a chunk's text is empty or a placeholder phrase, perhaps with a short
        note: a section yet to be written."""
        if (
            len(text) > _MARKUP_SHARE * self.longest
            and "{{" not in text
            and "{%" not in text
            and "<!--" not in text
        ):
            return False  # the common case, decided without reading the text
        words = bare(text)
        if not words:
            return True
        if len(words) > self.longest:
            return False
        for phrase in self.phrases:
            rest = words[len(phrase) :] if words.startswith(phrase) else None
            # The phrase ends at a word's end: `todo`, not `todos`; `暂无`, not `暂无法连接`.
            if rest is not None and (
                not rest or (rest[0] == " " and _note_length(rest) <= NOTE_MAX_CHARS + 1)
            ):
                return True
        return False


def _note_length(note: str) -> int:
    """A note's length, a Chinese character counting as three: four of them say as much as a
    dozen Latin letters (`待补充`, `优化` are notes; `可先扩容节点` is an instruction)."""
    return len(note) + 2 * len(_CJK.findall(note))
