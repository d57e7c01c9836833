"""A query read against one corpus: what it asks about, how much each part weighs.

The query's tokens (`engine.tokenize`) become **concepts**, each distinct token once. What a
concept weighs depends on what the corpus knows of it:

* **known** — the corpus holds the word or a glossary equivalent (`engine.lexicon`), or,
  when it holds none of these, a dictionary translation (`engine.bilingual`): its weight is
  BM25's IDF over the chunks, of its most common form ("内存" is as informative as
  "memory"). A Chinese word the segmenter cut differently inside the documents is known when
  it appears verbatim in some chunk.
* **typo** — a Latin word the corpus lacks, no English word (below), that is within one or
  two edits of a corpus word (`engine.fuzzy`; as typed, among the corpus's words as written,
  when the stemmer changed it: `nothing` is no slip of `another`, though `noth` is one edit
  from `anoth`): it stands for that word, at `TYPO_FACTOR` of its weight. Only the first
  `TYPO_READINGS` such words of a query are read as typos, the rest as the words the corpus
  lacks they are: a real question has a few, a paste of thousands of random letters has
  hundreds, each compared with dozens of corpus words. Chinese
  characters the segmenter could not read as a word the corpus knows (a word the corpus
  lacks, or two or more lone characters in a row) that differ from a corpus
  word in one character which sounds alike (`节店` → `节点`: `engine.bilingual`) are that word,
  as a typo: an input method picks a homophone, not a neighbouring key.
* **id** — an unknown token with a digit (`e0607`, `qx2lv`, `v2`): log noise, weight 0,
  unless it is a word of three letters or more with a number on its end (`raid1`, `mysql8`,
  `node12`: a device, a version, a host) whose letters the corpus holds: it is read as
  them, as `node-12` is read as `node`. A Chinese count the corpus lacks is noise too
  (`两百多个`, `十几秒`: `tokenize.is_cjk_count`).
  Log noise the tokenizer drops (an address, a port, a long number, a hex id:
  `engine.tokenize`) is evidence when the corpus holds it verbatim, as a whole run of some
  chunk's text (`169.254.20.10`, the node-local DNS address a page documents): it is a
  **substring** concept, like a Chinese word found verbatim, weighed by the chunks holding it.
* **unknown** — a word the corpus has never seen: it weighs `UNKNOWN_FACTOR` of the rarest
  word's weight, so a question about something the corpus lacks still falls short (a query made
  only of such words finds nothing at all), while one stray filler word or name cannot sink a
  question whose meaningful words all match. A lone Chinese character weighs
  `SINGLE_CHARACTER_FACTOR` of that, as a known one does: the segmenter's leftover of a
  colloquial verb or a typo (`涨`, `马` for `码`) more often than the question's subject.
* **word** — an unknown Latin word of `WORD_MIN_LETTERS` letters or more as typed, whose stem
  is an English word of the dictionary (`counter`, `yesterday`: `engine.bilingual`), or one of
  `COMMON_MIN_LETTERS` that the dictionary writes as typed (`link`, `west`), or a Chinese
  word of `WORD_MIN_CHARACTERS` characters or more that is one of its headwords (`一口气`,
  `时不时`): no typo of a corpus word (`counter` is not `cluster`), and it weighs
  `WORD_FACTOR` of the rarest word's weight, less than an unknown token: it says how the
  asker talks, seldom what they ask.
* a word that no dictionary knows and that misspells a stopword (`becuase`, `shoud`: the
  same first letter, within the typo reader's distance) is a stopword: no concept.
* **absent** — a name the corpus never mentions: an identifier it holds in no form
  (`engine.identifiers`; its parts are concepts as any word is, the whole is one more), or
  an unknown Latin word of four letters or more that is no English word of the dictionary
  (`istio`, `pushgateway`: `engine.bilingual`). No chunk covers it, and it weighs
  `ABSENT_FACTOR` times the rarest word's weight: a name the corpus lacks says more about
  what the question is about than any one word it lacks.

A Chinese word the corpus does not know is first re-read by jieba's dictionary alone (its HMM
sometimes glues a function character onto a word: `有大` → `大`), then, if it is a
compound of words the corpus holds as search mode cuts it (`错误信息` → `错误`, `信息`), as
those words. Whole identifiers
(`kube-proxy`, `kubepodcrashlooping`) that the corpus holds add to the ranking, never to the
coverage: their parts are concepts of their own.

A lay expression of the ops thesaurus (`engine.lexicon`) that the query says (`node agent`,
`挂掉`) **bridges** the concepts it is made of to the technical terms it stands for
(`kubelet`; `crash`, `退出`), those the corpus holds and the query does not already name:
a chunk holding a bridge term covers the concept at a discount (`engine.grading`), and the
terms add to the rank at a discount (`engine.index`). A concept the corpus does not know
otherwise is **bridged**: it weighs what its most common bridge term weighs. An expression
whose words are no concept of the query (`起不来`: stopwords to the segmenter) becomes a
bridged concept of its own. A query of bridged concepts alone has no candidates, as one of
typos alone: the thesaurus guesses, it does not find.

A word of the lexicon's discourse list (`issue`, `production`, `check`, `服务`, `帮忙看下`:
that something is wrong, where, that help is wanted) is read and weighed as any word, and
marked `discourse`: a query of such words alone, like one of counts alone (`1 2 3`), names
nothing a page is about and has no candidates either (`ReadQuery.empty`).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, replace
from enum import StrEnum

from lookup_knowledge.engine import tokenize
from lookup_knowledge.engine.bilingual import RESPELL_LENGTHS
from lookup_knowledge.engine.lexicon import Lexicon

TYPO_FACTOR = 0.8
SINGLE_CHARACTER_FACTOR = 0.5
UNKNOWN_FACTOR = 0.5
WORD_FACTOR = 0.25  # an English word the corpus lacks, of the rarest word's weight
WORD_MIN_LETTERS = 5  # shorter dictionary words may still be typos (`leas`, `fial`)
COMMON_MIN_LETTERS = 4  # down to this length, a common word as typed is a word (`link`)
WORD_MIN_CHARACTERS = 3  # a Chinese word of two is as often the question's subject (`过期`)
ABSENT_FACTOR = 2.0  # an identifier the corpus lacks, of the rarest word's weight
TYPO_READINGS = 32  # words of one query read as typos at most: no tune question needs 9
COUNT_MAX_DIGITS = 2  # a number this short is a count or an ordinal, seldom a code
RESPELL_ATTEMPTS = 64  # corpus look-ups for misspelt Chinese words, at most, per query
RESPELL_RUN = 80  # longest run of Chinese characters read for typos (a phrase, not a paste)
# A word with a number on its end (`raid1`, `eth0`, `mysql8`, `node12`): a device, a
# version, a host; its letters are the word the corpus may hold (as `node-12` gives `node`).
_NUMBERED = re.compile(r"([a-z]{3,})\d{1,3}")


class Known(StrEnum):
    KNOWN = "known"
    SUBSTRING = "substring"  # a CJK word or log token found verbatim in chunk text
    TYPO = "typo"
    BRIDGED = "bridged"  # known only through the thesaurus's technical terms
    UNKNOWN = "unknown"
    WORD = "word"  # a word of the dictionary (English or Chinese) the corpus lacks: no typo
    ABSENT = "absent"  # an identifier the corpus lacks in every form (engine.identifiers)


@dataclass(frozen=True, slots=True)
class Concept:
    token: str
    variants: tuple[str, ...]  # corpus terms that cover it (empty for substring/unknown)
    known: Known
    bridges: tuple[str, ...] = ()  # corpus terms the thesaurus says it stands for
    discourse: bool = False  # says what is around the question's subject (`Lexicon.discourse`)


@dataclass(frozen=True, slots=True)
class ReadQuery:
    concepts: tuple[Concept, ...]
    wholes: tuple[str, ...]  # whole identifiers the corpus holds
    joined: tuple[str, ...] = ()  # those of `wholes` that are two words joined (`daemon set`)

    @property
    def bridges(self) -> tuple[str, ...]:
        """Every bridge term of the query's concepts, once."""
        return tuple(dict.fromkeys(b for c in self.concepts for b in c.bridges))

    @property
    def sole_subject(self) -> Concept | None:
        """The one concept that finds what the query is about, if only one does: the other
        concepts are discourse words, counts or words the corpus lacks (no typo, no bridge),
        and no identifier the corpus holds is named."""
        if set(self.wholes) - set(self.joined):
            return None
        finding = [c for c in self.concepts if _is_subject(c) or c.known in _STANDING_IN]
        return finding[0] if len(finding) == 1 and _is_subject(finding[0]) else None

    @property
    def empty(self) -> bool:
        """Nothing the corpus holds as such: typos alone (`bake` → `make`) prove nothing;
        neither do counts and ordinals alone (`1 2 3`: numbers of `COUNT_MAX_DIGITS` digits or
        fewer, which any page has somewhere; `137` or `504` is a code, and stays one), nor
        discourse words alone (`we have an issue in production`: they say that something is
        wrong and where, not what)."""
        if set(self.wholes) - set(self.joined):
            return False  # an identifier the corpus holds as such (`ServiceDown`) names a page
        return not any(_is_subject(c) for c in self.concepts)


_STANDING_IN = (Known.TYPO, Known.BRIDGED)  # concepts that find chunks through other words


def _is_subject(concept: Concept) -> bool:
    """A word the corpus holds that says what the query is about: no discourse word, no count."""
    return (
        concept.known in (Known.KNOWN, Known.SUBSTRING)
        and not concept.discourse
        and not _is_count(concept.token)
    )


def _is_count(token: str) -> bool:
    return token.isascii() and token.isdigit() and len(token) <= COUNT_MAX_DIGITS


Translate = Callable[[str], frozenset[str]]
Nearest = Callable[[str, str], str | None]  # (stem, word as typed) → the corpus term meant
Respell = Callable[[str, int], str | None]


def no_words(word: str) -> bool:
    return False


def every_word(word: str) -> bool:
    return True


def no_translations(word: str) -> frozenset[str]:
    return frozenset()


def no_respelling(span: str, position: int) -> str | None:
    return None


def read_query(
    text: str,
    lexicon: Lexicon,
    *,
    has_term: Callable[[str], bool],
    in_text: Callable[[str], bool],
    nearest: Nearest,
    translate: Translate = no_translations,
    respell: Respell = no_respelling,
    held_verbatim: Callable[[str], bool] = no_words,
    is_name: Callable[[str], bool] = no_words,
    is_word: Callable[[str], bool] = no_words,
    is_written: Callable[[str], bool] = every_word,
    is_common: Callable[[str], bool] = no_words,
) -> ReadQuery:
    """Concepts of `text`: `has_term` (a corpus token), `in_text` (verbatim in some chunk's
    text), `nearest` (a typo's corpus word, from its stem and the word as typed),
    `translate` (corpus words that translate a word), `respell` (the corpus word a span of
    Chinese characters misspells at a position), `held_verbatim` (whether a run of the query
    is log noise that some chunk holds as a whole run of its text) and `is_name` (whether a
    Latin word the corpus lacks, no typo of one, is a name rather than a word of the
    language) describe the corpus; `is_word` (a stem of the language's words) and
    `is_written` (a word of the language as typed) and `is_common` (a common word of it as
    typed) describe the language."""
    text = tokenize.strip_enumeration(text)  # `1. Read the pool metrics`, as the index reads it
    concepts: dict[str, Concept] = {}
    wholes: list[str] = []
    held = _Held(lexicon, has_term, translate)
    in_text = functools.cache(in_text)  # a scan of the corpus's text: once per word and query
    nearest = _at_most(nearest, TYPO_READINGS)
    respelt = _respellings(text, held, in_text, respell)
    misspelt = {c for _span, _word, characters in respelt for c in characters}
    stripped = tokenize.strip_log_structure(text)  # once: its tokens, compounds and runs
    read = [t for t in _tokens(stripped, lexicon, held, in_text) if t.text not in misspelt]
    for token in read:
        if token.whole:
            if has_term(token.text) and token.text not in wholes:
                wholes.append(token.text)
            continue
        if token.text in concepts:
            continue
        concept = _concept(
            token, lexicon, held, in_text, nearest, is_name, is_word, (is_written, is_common)
        )
        if concept is not None:
            if token.text in lexicon.discourse:
                concept = replace(concept, discourse=True)
            concepts[token.text] = concept
    joined = []
    for pair in (*_joined_words(text), *_inner_compounds(stripped)):
        if has_term(pair) and pair not in wholes and pair not in concepts and pair not in joined:
            joined.append(pair)  # `crash loop`, `kube api`: the corpus's `crashloop`
    for run in tokenize.latin_runs(stripped):
        if held_verbatim(run) and run not in concepts:  # noise to most corpora, not to this
            concepts[run] = Concept(run, (), Known.SUBSTRING)
    for span, word, _characters in respelt:
        if span not in concepts:
            forms = tuple(sorted(v for v in lexicon.variants(word) if has_term(v)))
            concepts[span] = Concept(span, forms or (word,), Known.TYPO)
    if lexicon.bridges:
        sequence = [t.text for t in read if not t.whole]
        _bridge(concepts, sequence, tokenize.normalize(text), lexicon, has_term)
    return ReadQuery(tuple(concepts.values()), (*wholes, *joined), tuple(joined))


# Two plain words in a row (lower case, capitalized or all capitals; no identifier). A word
# ends at a space, at the end, at Chinese text, or at a `.` or `:` that ends a sentence or a
# clause (`not ready.`, `daemon set：为什么`), never at one inside an identifier (`max.poll`,
# `ready:true`).
_PLAIN = r"(?:[A-Z]+|[A-Za-z][a-z]*)"
_NAME = r"[A-Za-z0-9_\-/]"  # what continues an identifier
_END = rf"(?!{_NAME}|[.:]{_NAME})"
_WORD_PAIR = re.compile(rf"(?<![A-Za-z0-9_.\-:/])({_PLAIN})\s+(?=({_PLAIN}){_END})")


def _joined_words(text: str) -> list[str]:
    """Each pair of neighbouring English words of the query written as one word, stemmed
    (`daemon set` → `daemonset`, `crash looping` → `crashloop`, `start up` → `startup`): a
    compound the corpus may write joined, or hold inside an identifier
    (`tokenize.inner_compounds`). Words of an identifier (`ServiceMonitors`, `kube-proxy`)
    are no pair: their whole is read already."""
    plain = unicodedata.normalize("NFKC", text)
    return [tokenize.stem((m.group(1) + m.group(2)).lower()) for m in _WORD_PAIR.finditer(plain)]


def _inner_compounds(stripped: str) -> list[str]:
    """The compounds inside the query's identifiers (`tokenize.inner_compounds`), as the
    index adds them to its texts: a page's name `KubeDaemonSetMisScheduled` holds
    `daemonset`, so the same name asked holds it too, and names all of its title.
    `stripped`: the query without its log structure (`tokenize.strip_log_structure`): a log
    line's keys and levels are no words of the question (`scrape_pool=`, `E0607`), as its
    tokens read it."""
    found: dict[str, None] = {}
    plain = unicodedata.normalize("NFKC", stripped)
    for run in tokenize.RUN.findall(plain):
        found.update(dict.fromkeys(tokenize.inner_compounds(run)))
    return list(found)


def _respellings(
    text: str, held: _Held, in_text: Callable[[str], bool], respell: Respell
) -> list[tuple[str, str, frozenset[str]]]:
    """The query's misspelt Chinese words: (the span as typed, the corpus word it stands for,
    the misspelt words and characters of the span, whose tokens it replaces).

    Only characters the segmenter could not read as a word the corpus knows are suspect: a
    word of several characters that the corpus neither holds nor contains verbatim (`转包`),
    or a lone character next to another lone one (`好 / 尽`). A span that holds one suspect
    character, and that the corpus does not contain verbatim, is a typo when a corpus word
    differs from it in that character only, by one that sounds alike; the longest span wins.
    """
    found: list[tuple[str, str, frozenset[str]]] = []
    attempts = 0
    for run in tokenize.cjk_runs(text):
        if not 2 <= len(run) <= RESPELL_RUN:
            continue
        pieces = tokenize.segment(run)
        suspect = [""] * len(run)  # each character's suspect piece ("" : none)
        boundary = [False] * (len(run) + 1)  # where a piece starts
        start = 0
        for i, piece in enumerate(pieces):
            boundary[start] = True
            alone = len(piece) == 1 and (
                (i > 0 and len(pieces[i - 1]) == 1)
                or (i + 1 < len(pieces) and len(pieces[i + 1]) == 1)
            )
            unknown = len(piece) > 1 and not held.forms(piece) and not in_text(piece)
            if alone or unknown:
                suspect[start : start + len(piece)] = [piece] * len(piece)
            start += len(piece)
        if not any(suspect):
            continue
        used = [False] * len(run)
        for length in sorted(RESPELL_LENGTHS, reverse=True):  # the longest span first
            for begin in range(len(run) - length + 1):
                if not boundary[begin] or any(used[begin : begin + length]):
                    continue
                span = run[begin : begin + length]
                for position in range(length):
                    if not suspect[begin + position]:
                        continue
                    attempts += 1
                    if attempts > RESPELL_ATTEMPTS:
                        return found
                    word = respell(span, position)
                    if word is None or not held.has_term(word) or in_text(span):
                        continue
                    replaced = {suspect[j] for j in range(begin, begin + length) if suspect[j]}
                    replaced |= {run[j] for j in range(begin, begin + length) if suspect[j]}
                    found.append((span, word, frozenset(replaced)))
                    used[begin : begin + length] = [True] * length
                    break
    return found


def _bridge(
    concepts: dict[str, Concept],
    sequence: list[str],
    text: str,
    lexicon: Lexicon,
    has_term: Callable[[str], bool],
) -> None:
    """Add the thesaurus's bridge terms to the concepts of the lay expressions the query says
    (`sequence`: its tokens in order; `text`: normalized), but for terms it names itself."""
    compact = "".join(text.split())
    own = {v for c in concepts.values() for v in c.variants}
    for bridge in lexicon.said(sequence, compact):
        terms = [t for t in bridge.terms if t not in own and has_term(t)]
        if not terms:
            continue
        if bridge.verbatim:
            words = [w for w in concepts if w in bridge.verbatim or bridge.verbatim in w]
        else:  # an id among its words (`137` a corpus lacks) is no concept
            words = [w for w in bridge.words if w in concepts]
        if not words:  # its words are stopwords or ids to this corpus: a concept of its own
            name = bridge.verbatim or " ".join(bridge.words)
            words = [name]
            concepts.setdefault(name, Concept(name, (), Known.BRIDGED))
        for word in words:
            concept = concepts[word]
            new = tuple(t for t in terms if t not in concept.bridges)
            if not new:
                continue
            # The query's word is one the corpus lacks, which the thesaurus knows.
            lacking = concept.known in (Known.UNKNOWN, Known.WORD, Known.ABSENT)
            known = Known.BRIDGED if lacking else concept.known
            concepts[word] = replace(concept, known=known, bridges=concept.bridges + new)


@dataclass(frozen=True, slots=True)
class _Held:
    """The corpus forms of a query word: its own or glossary forms, else its translations."""

    lexicon: Lexicon
    has_term: Callable[[str], bool]
    translate: Translate

    def forms(self, word: str) -> tuple[str, ...]:
        own = tuple(sorted(v for v in self.lexicon.variants(word) if self.has_term(v)))
        return own or tuple(sorted(self.translate(word)))


def _at_most(nearest: Nearest, readings: int) -> Nearest:
    """`nearest` for the first `readings` words asked of it, then no typo: each reading
    compares the word with dozens of corpus words."""
    asked = 0

    def bounded(word: str, typed: str) -> str | None:
        nonlocal asked
        asked += 1
        return nearest(word, typed) if asked <= readings else None

    return bounded


def _tokens(
    stripped: str, lexicon: Lexicon, held: _Held, in_text: Callable[[str], bool]
) -> list[tokenize.Token]:
    """The tokens of the query without its log structure (`stripped`)."""
    out: list[tokenize.Token] = []
    for token in tokenize.tokens(stripped, lexicon.stopwords, search_mode=False):
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
            # A compound of words the corpus holds (`错误信息`, `安全软件`): those words, as the
            # documents' search-mode segmentation reads it.
            parts = [w for w in tokenize.segment_for_search(word) if w != word]
            tiles = tokenize.tiling(word, {p for p in parts if held.forms(p) or in_text(p)})
            if tiles:
                out.extend(tokenize.Token(p) for p in tiles)
                continue
        elif (numbered := _NUMBERED.fullmatch(word)) and not held.forms(word):
            letters = numbered.group(1)
            stemmed = tokenize.stem(letters)
            if letters not in lexicon.stopwords and held.forms(stemmed):
                out.append(tokenize.Token(stemmed, raw=letters))
            continue  # else an id, a count, a version: noise to this corpus (`_concept`)
        out.append(token)
    return out


def _concept(
    token: tokenize.Token,
    lexicon: Lexicon,
    held: _Held,
    in_text: Callable[[str], bool],
    nearest: Nearest,
    is_name: Callable[[str], bool],
    is_word: Callable[[str], bool],
    written: tuple[Callable[[str], bool], Callable[[str], bool]],
) -> Concept | None:
    word = token.text
    variants = held.forms(word)
    if variants:
        return Concept(word, variants, Known.KNOWN)
    if tokenize.is_cjk_word(word):
        if len(word) > 1 and in_text(word):
            return Concept(word, (), Known.SUBSTRING)
        if tokenize.is_cjk_count(word):
            return None  # `两百多个`, `十几秒`: a count, as a number is to Latin text
        if len(word) >= WORD_MIN_CHARACTERS and is_word(word):
            return Concept(word, (), Known.WORD)  # `一口气`, `时不时`: the asker's idiom
        return Concept(word, (), Known.UNKNOWN)
    if tokenize.has_digit(word):
        return None  # an id, a count, a version: noise to this corpus
    inflected = tokenize.inflected_stems(token.raw)
    for other in inflected:  # `rebalancing` for a corpus that says `rebalances`
        variants = held.forms(other)
        if variants:
            return Concept(word, variants, Known.KNOWN)
    typed = token.raw or word
    is_written, is_common = written
    if is_word(word) and (
        is_written(typed)
        if len(typed) >= WORD_MIN_LETTERS
        else len(typed) >= COMMON_MIN_LETTERS and is_common(typed)
    ):
        # `counter`, `plain`: no typo of `cluster`, `plan`; but `operater`, whose stem is
        # `operate`'s, is no word as typed, and may be a typo of `operator`. A shorter word
        # is one only when the language uses it as typed: `link` is no typo of `line`, while
        # `leas` (`lea`, plural) may well be one of `leak`.
        return Concept(word, (), Known.WORD)
    if is_name(word) and lexicon.misspelt_stopword(token.raw or word) is not None:
        return None  # `becuase`, `shoud`: a stopword, misspelt; no name the corpus lacks
    corrected = nearest(word, token.raw or word)
    if corrected is not None:
        forms = tuple(sorted(v for v in lexicon.variants(corrected) if held.has_term(v)))
        return Concept(word, forms or (corrected,), Known.TYPO)
    if is_name(word) and all(is_name(other) for other in inflected):
        return Concept(word, (), Known.ABSENT)  # `istio`, `thanos`: a tool the corpus lacks
    return Concept(word, (), Known.UNKNOWN)
