"""A query read against one corpus: what it asks about, how much each part weighs.

The query's tokens (`engine.tokenize`) become **concepts**, each distinct token once. What a
concept weighs depends on what the corpus knows of it:

* **known** — the corpus holds the word or a glossary equivalent (`engine.lexicon`), or,
  when it holds none of these, a dictionary translation (`engine.bilingual`): its weight is
  BM25's IDF over the chunks, of its most common form ("内存" is as informative as
  "memory"). A Chinese word the segmenter cut differently inside the documents is known when
  it appears verbatim in some chunk.
* **typo** — a Latin word the corpus lacks that is within one or two edits of a corpus word
  (`engine.fuzzy`): it stands for that word, at `TYPO_FACTOR` of its weight.
* **id** — an unknown token with a digit (`e0607`, `qx2lv`, `v2`): log noise, weight 0.
* **unknown** — a word the corpus has never seen: it weighs `UNKNOWN_FACTOR` of the rarest
  word's weight, so a question about something the corpus lacks still falls short (a query made
  only of such words finds nothing at all), while one stray filler word or name cannot sink a
  question whose meaningful words all match.

A Chinese word the corpus does not know is first re-read by jieba's dictionary alone (its HMM
sometimes glues a function character onto a word: `有大` → `大`). Whole identifiers
(`kube-proxy`, `kubepodcrashlooping`) that the corpus holds add to the ranking, never to the
coverage: their parts are concepts of their own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from lookup_knowledge.engine import tokenize
from lookup_knowledge.engine.lexicon import Lexicon

TYPO_FACTOR = 0.8
SINGLE_CHARACTER_FACTOR = 0.5
UNKNOWN_FACTOR = 0.5


class Known(StrEnum):
    KNOWN = "known"
    SUBSTRING = "substring"  # a CJK word found verbatim in chunk text, not as a token
    TYPO = "typo"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class Concept:
    token: str
    variants: tuple[str, ...]  # corpus terms that cover it (empty for substring/unknown)
    known: Known


@dataclass(frozen=True, slots=True)
class ReadQuery:
    concepts: tuple[Concept, ...]
    wholes: tuple[str, ...]  # whole identifiers the corpus holds

    @property
    def empty(self) -> bool:
        """Nothing the corpus holds as such: typos alone (`bake` → `make`) prove nothing."""
        return not any(c.known in (Known.KNOWN, Known.SUBSTRING) for c in self.concepts)


Translate = Callable[[str], frozenset[str]]


def no_translations(word: str) -> frozenset[str]:
    return frozenset()


def read_query(
    text: str,
    lexicon: Lexicon,
    *,
    has_term: Callable[[str], bool],
    in_text: Callable[[str], bool],
    nearest: Callable[[str], str | None],
    translate: Translate = no_translations,
) -> ReadQuery:
    """Concepts of `text`: `has_term` (a corpus token), `in_text` (verbatim in some chunk's
    text), `nearest` (a typo's corpus word) and `translate` (corpus words that translate a
    word) describe the corpus."""
    concepts: dict[str, Concept] = {}
    wholes: list[str] = []
    held = _Held(lexicon, has_term, translate)
    for token in _tokens(text, lexicon, held, in_text):
        if token.whole:
            if has_term(token.text) and token.text not in wholes:
                wholes.append(token.text)
            continue
        if token.text in concepts:
            continue
        concept = _concept(token, lexicon, held, in_text, nearest)
        if concept is not None:
            concepts[token.text] = concept
    return ReadQuery(tuple(concepts.values()), tuple(wholes))


@dataclass(frozen=True, slots=True)
class _Held:
    """The corpus forms of a query word: its own or glossary forms, else its translations."""

    lexicon: Lexicon
    has_term: Callable[[str], bool]
    translate: Translate

    def forms(self, word: str) -> tuple[str, ...]:
        own = tuple(sorted(v for v in self.lexicon.variants(word) if self.has_term(v)))
        return own or tuple(sorted(self.translate(word)))


def _tokens(
    text: str, lexicon: Lexicon, held: _Held, in_text: Callable[[str], bool]
) -> list[tokenize.Token]:
    out: list[tokenize.Token] = []
    text = tokenize.strip_log_structure(text)
    for token in tokenize.tokens(text, lexicon.stopwords, search_mode=False):
        word = token.text
        if (
            len(word) > 1
            and tokenize.is_cjk_word(word)
            and not held.forms(word)
            and not in_text(word)
        ):
            pieces = tokenize.dictionary_words(word, lexicon.stopwords)
            if not pieces:
                continue
            if pieces != [word] and any(held.forms(p) for p in pieces):
                out.extend(tokenize.Token(p) for p in pieces)
                continue
        out.append(token)
    return out


def _concept(
    token: tokenize.Token,
    lexicon: Lexicon,
    held: _Held,
    in_text: Callable[[str], bool],
    nearest: Callable[[str], str | None],
) -> Concept | None:
    word = token.text
    variants = held.forms(word)
    if variants:
        return Concept(word, variants, Known.KNOWN)
    if tokenize.is_cjk_word(word):
        if len(word) > 1 and in_text(word):
            return Concept(word, (), Known.SUBSTRING)
        return Concept(word, (), Known.UNKNOWN)
    if tokenize.has_digit(word):
        return None  # an id, a count, a version: noise to this corpus
    corrected = nearest(word)
    if corrected is not None:
        forms = tuple(sorted(v for v in lexicon.variants(corrected) if held.has_term(v)))
        return Concept(word, forms or (corrected,), Known.TYPO)
    return Concept(word, (), Known.UNKNOWN)
