"""Term counts of many document texts at once: the fast path of index building.

`tokenize.tokens` reads one text token by token in Python, which is fine for a query but
costs seconds over 10,000 documents. Here the same tokens (search mode: documents) are
counted in three vectorized passes:

1. each text is split at whitespace and its pieces are counted (`str.split` and
   `collections.Counter`, both in C); every distinct piece gets an id. No token spans
   whitespace, so a text's tokens are those of its pieces;
2. each distinct piece is tokenized once for the whole corpus: cut into runs (a CJK run, or
   a Latin compound), Latin compounds through `tokenize.compound` (cached), CJK runs through
   one batched call to the segmenter;
3. numpy expands (text, piece, count) into (text, term, count) and sums duplicates.

The result is the bag of terms `tokenize.tokens(text, stopwords, search_mode=True)` gives
each text, with terms numbered in sorted order, plus the compounds an identifier holds inside
it that the corpus also writes as words of their own (`tokenize.inner_compounds`: the
`daemonset` of `KubeDaemonSetMisScheduled`, when some text says `daemonset`).
"""

from __future__ import annotations

import unicodedata
from array import array
from collections import Counter, defaultdict
from collections.abc import Collection, Sequence
from dataclasses import dataclass

import numpy as np

from lookup_knowledge.engine import tokenize

_SEPARATOR = "\n"  # between CJK runs in one segmenter call: never part of a word


@dataclass(frozen=True, slots=True)
class Bags:
    """Sparse counts: text `unit[i]` holds term `term[i]` `count[i]` times."""

    unit: np.ndarray  # int32
    term: np.ndarray  # int32, into `words`
    count: np.ndarray  # int32
    words: tuple[str, ...]  # the vocabulary, sorted
    unit_count: int

    def regroup(self, groups: np.ndarray, group_count: int) -> Bags:
        """The counts summed over units mapped to groups (`groups[unit]`), e.g. documents."""
        return _summed(groups[self.unit], self.term, self.count, self.words, group_count)

    def first(self, count: int) -> Bags:
        """The bags of units 0 … count − 1 only, summed."""
        kept = self.unit < count
        return _summed(self.unit[kept], self.term[kept], self.count[kept], self.words, count)


def bags(
    texts: Sequence[str],
    stopwords: Collection[str],
    *,
    summed: bool = True,
    surfaces: dict[str, str] | None = None,
    words: Collection[str] | None = None,
) -> Bags:
    """The bags of `texts`. Unless `summed`, a (text, term) pair may come more than once (from
    several pieces of the text): `regroup` sums them, and skipping the sum here saves a sort
    when the caller regroups anyway. `surfaces`, when given, is filled with every Latin word
    as written (lowercased) and its term: `replication` → `replic`, `disk` → `disk`.
    `words`: the corpus's words, which an identifier's inner compounds must be among to be
    kept; by default the words of `texts` themselves."""
    frozen = frozenset(stopwords)
    run_ids: defaultdict[str, int] = defaultdict()
    run_ids.default_factory = run_ids.__len__  # a new run gets the next id
    runs = array("q")  # 8 bytes an entry: a list of ints would take 36
    counts = array("q")
    sizes = array("q")
    for text in texts:
        counted = Counter(unicodedata.normalize("NFKC", text).split())
        runs.extend(map(run_ids.__getitem__, counted))
        counts.extend(counted.values())
        sizes.append(len(counted))
    terms_of_run = _run_terms(list(run_ids), frozen, surfaces, words)
    vocabulary = tuple(sorted({t for terms in terms_of_run for t in terms}))
    term_id = {t: i for i, t in enumerate(vocabulary)}
    lengths = np.fromiter(map(len, terms_of_run), np.int64, len(terms_of_run))
    flat = np.fromiter(
        (term_id[t] for terms in terms_of_run for t in terms), np.int64, int(lengths.sum())
    )
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    run = np.frombuffer(runs, dtype=np.int64)
    unit = np.repeat(np.arange(len(texts), dtype=np.int64), np.frombuffer(sizes, dtype=np.int64))
    count = np.frombuffer(counts, dtype=np.int64)
    per = lengths[run]
    total = int(per.sum())
    first = np.repeat(offsets[run] - (np.cumsum(per) - per), per)
    term = flat[first + np.arange(total)]
    unit, count = np.repeat(unit, per), np.repeat(count, per)
    if summed:
        return _summed(unit, term, count, vocabulary, len(texts))
    return Bags(
        unit.astype(np.int32), term.astype(np.int32), count.astype(np.int32), vocabulary, len(texts)
    )


def _summed(
    unit: np.ndarray, term: np.ndarray, count: np.ndarray, words: tuple[str, ...], units: int
) -> Bags:
    key = unit.astype(np.int64) * max(len(words), 1) + term
    distinct, inverse = np.unique(key, return_inverse=True)
    summed = np.bincount(inverse, weights=count, minlength=len(distinct)).astype(np.int32)
    width = max(len(words), 1)
    return Bags(
        (distinct // width).astype(np.int32),
        (distinct % width).astype(np.int32),
        summed,
        words,
        units,
    )


def _run_terms(
    pieces: list[str],
    stopwords: frozenset[str],
    surfaces: dict[str, str] | None,
    words: Collection[str] | None,
) -> list[tuple[str, ...]]:
    """The search-mode terms of each distinct whitespace-free piece of text."""
    runs_of = [tokenize.RUN.findall(piece) for piece in pieces]
    run_ids: dict[str, int] = {}
    for runs in runs_of:
        for run in runs:
            run_ids.setdefault(run, len(run_ids))
    terms = _terms_of_runs(list(run_ids), stopwords, surfaces)
    _add_inner_compounds(list(run_ids), terms, words)
    return [tuple(t for run in runs for t in terms[run_ids[run]]) for runs in runs_of]


def _terms_of_runs(
    runs: list[str], stopwords: frozenset[str], surfaces: dict[str, str] | None
) -> list[tuple[str, ...]]:
    """The search-mode terms of each distinct run; CJK runs segmented in one call."""
    out: list[tuple[str, ...]] = [()] * len(runs)
    cjk: list[int] = []
    for position, run in enumerate(runs):
        if tokenize.is_cjk_word(run):
            cjk.append(position)
            continue
        found = tokenize.compound(run, stopwords)
        out[position] = tuple(t.text for t in found)
        if surfaces is not None:
            for token in found:
                if token.raw:
                    surfaces[token.raw] = token.text
    if cjk:
        joined = _SEPARATOR.join(runs[p] for p in cjk)
        pieces = iter(cjk)
        current: list[str] = []
        for word in tokenize.segment_for_search(joined):
            if word == _SEPARATOR:
                out[next(pieces)] = tuple(current)
                current = []
            elif word not in stopwords:
                current.append(word)
        out[next(pieces)] = tuple(current)
    return out


def _add_inner_compounds(
    runs: list[str], terms: list[tuple[str, ...]], words: Collection[str] | None
) -> None:
    """Each identifier's inner compounds (`tokenize.inner_compounds`) that are words of the
    corpus, added to its run's terms: only a compound some text writes as a word of its own
    (`daemonset`), never a join no one writes (`setmis`), which would only dilute the
    heading's weight."""
    held = words if words is not None else {t for found in terms for t in found}
    for position, run in enumerate(runs):
        if len(terms[position]) < 3 or tokenize.is_cjk_word(run):
            continue  # no parts and a whole, or a Chinese sentence's words: no identifier
        own = terms[position]
        extra = tuple(c for c in tokenize.inner_compounds(run) if c in held and c not in own)
        if extra:
            terms[position] = own + extra
