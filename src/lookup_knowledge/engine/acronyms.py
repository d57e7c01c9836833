"""Acronyms the corpus spells out itself: `HPA` ↔ `Horizontal Pod Autoscaler`.

An asker says "the pod autoscaler", the runbook's title is `KubeHpaMaxedOut`; an asker says
`CRI`, the page says "container runtime interface". No general dictionary knows a corpus's
own abbreviations, but the corpus usually defines them where it first uses them: a word in
capitals of 2–5 letters right after or right before as many words whose initials spell it
(`Horizontal Pod Autoscaler (HPA)`, `OOM (out of memory)`, `stop-the-world (STW)`;
identifier parts count as words: `PersistentVolumeClaim (PVC)`). A definition may leave out
its function words (`API Priority and Fairness (APF)`). Each acronym keeps the expansion the
corpus uses most. Only definitions next to the acronym count: initials found anywhere in a
document match by chance (`HTTP` → "tell the pool").

A query then

* **names an acronym** when it holds its expansion's words, all but at most one and at least
  two ("pod autoscaler" names `hpa`);
* **names an expansion** when it holds the acronym (`cri` names `container`, `runtime`,
  `interface`).

The other side is added to the query as a whole identifier is (`engine.index`): to the rank
at a discount and to the heading terms the query names, never to its coverage (`support`),
so an acronym moves the runbook it titles up and names its heading, but cannot by itself make
a question look answered.

Reading a corpus for its acronyms is one regex scan of its text: about 20 ms for the bundled
knowledge base, 0.2 s of CPU for 10,000 documents. As with the bilingual dictionary
(`engine.bilingual`), it is done on a background thread a few seconds after the index is
built, or by the first query, whichever comes first, so that it never slows the service's
start and no answer depends on timing.
"""

from __future__ import annotations

import contextlib
import re
import threading
import weakref
from collections import Counter
from collections.abc import Callable, Iterable

from lookup_knowledge.engine import tokenize
from lookup_knowledge.engine.bilingual import LOAD_DELAY_S
from lookup_knowledge.engine.query import Known, ReadQuery

MAX_LETTERS = 5
_CAPITALS = re.compile(rf"(?<![A-Za-z0-9])[A-Z]{{2,{MAX_LETTERS}}}(?![A-Za-z0-9])")
_LATIN_RUN = re.compile(r"[A-Za-z0-9]+(?:[.\-_:/][A-Za-z0-9]+)*")
_SEPARATORS = re.compile(r"[.\-_:/]+")
# A word of a run: a capitalised or lowercase word, a block of capitals, or digits.
_PART = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")


class Acronyms:
    """acronym token → its expansion's tokens (stopwords dropped), and the reverse index."""

    def __init__(self, expansions: dict[str, tuple[str, ...]]) -> None:
        self._expansions = dict(expansions)
        self._by_word: dict[str, set[str]] = {}
        for acronym, expansion in self._expansions.items():
            for word in expansion:
                self._by_word.setdefault(word, set()).add(acronym)

    def __len__(self) -> int:
        return len(self._expansions)

    def expansion(self, acronym: str) -> tuple[str, ...]:
        return self._expansions.get(acronym, ())

    def named(self, tokens: Iterable[str]) -> list[str]:
        """Acronyms whose expansion `tokens` hold, but for at most one word (at least two)."""
        held = set(tokens)
        out = []
        for acronym in sorted({a for t in held for a in self._by_word.get(t, ())}):
            words = set(self._expansions[acronym])
            count = len(words & held)
            if acronym not in held and count >= 2 and count >= len(words) - 1:
                out.append(acronym)
        return out

    def wholes(self, read: ReadQuery, has_term: Callable[[str], bool]) -> tuple[str, ...]:
        """Corpus terms a query names through acronyms, beyond its own (see the module)."""
        if not self._expansions:
            return ()
        tokens = [c.token for c in read.concepts if c.known is Known.KNOWN]
        found = self.named(tokens)
        for token in tokens:
            found += [w for w in self.expansion(token) if w not in tokens]
        return tuple(w for w in dict.fromkeys(found) if has_term(w) and w not in read.wholes)


class CorpusAcronyms:
    """The acronyms of one corpus, found once: on a background thread `LOAD_DELAY_S` after
    the index is built, or by the first query, whichever comes first."""

    def __init__(self, texts: Callable[[], Iterable[str]], stopwords: frozenset[str]) -> None:
        """`texts()`: the corpus's documents, one text each, in their original case."""
        self._texts = texts
        self._stopwords = stopwords
        self._found: Acronyms | None = None
        self._lock = threading.Lock()
        # The timer holds no strong reference: an index dropped before it fires (a test's,
        # a benchmark's) is freed at once and never scanned.
        timer = threading.Timer(LOAD_DELAY_S, _prefetch, (weakref.ref(self),))
        timer.daemon = True
        timer.start()

    def get(self) -> Acronyms:
        found = self._found
        if found is not None:
            return found
        with self._lock:
            if self._found is None:
                self._found = find_acronyms(self._texts(), self._stopwords)
            return self._found


def _prefetch(reference: weakref.ref[CorpusAcronyms]) -> None:
    acronyms = reference()
    if acronyms is None:
        return
    # A failure here is raised again, to the caller, by the first query's own attempt.
    with contextlib.suppress(Exception):
        acronyms.get()


def find_acronyms(texts: Iterable[str], stopwords: frozenset[str]) -> Acronyms:
    """The acronyms a corpus defines, one text per document (original case)."""
    counts: dict[str, Counter[tuple[str, ...]]] = {}
    for text in texts:
        capitals = set(_CAPITALS.findall(text))
        if not capitals:
            continue
        words = [
            part
            for run in _LATIN_RUN.findall(text)
            for piece in _SEPARATORS.split(run)
            for part in _PART.findall(piece)
        ]
        for place, word in enumerate(words):
            if word in capitals:
                for expansion in _definitions(words, place, stopwords):
                    counts.setdefault(word, Counter())[expansion] += 1
    expansions = {}
    for capital, found in counts.items():
        best, _ = max(found.items(), key=lambda item: (item[1], item[0]))
        expansions[tokenize.stem(capital.lower())] = best
    return Acronyms(expansions)


def _definitions(
    words: list[str], place: int, stopwords: frozenset[str]
) -> Iterable[tuple[str, ...]]:
    """Expansions of the acronym `words[place]` right before or right after it: the words
    whose initials spell it, function words included or left out."""
    target = words[place].lower()
    reach = 2 * len(target)  # function words can double a definition's length
    before = words[max(0, place - reach) : place][::-1]  # nearest first
    after = words[place + 1 : place + 1 + reach]
    for side, reverse in ((before, True), (after, False)):
        taken: list[str] = []
        for word in side:
            if len(word) < 2 or not word.isalpha() or word == words[place]:
                break  # a definition is made of words, not of numbers
            taken.append(word.lower())
            ordered = taken[::-1] if reverse else taken
            content = [w for w in ordered if w not in stopwords]
            if len(content) > len(target):
                break
            spelled = "".join(w[0] for w in ordered)
            spelled_content = "".join(w[0] for w in content)
            if len(content) >= 2 and target in (spelled, spelled_content):
                yield tuple(dict.fromkeys(tokenize.stem(w) for w in content))
                break
