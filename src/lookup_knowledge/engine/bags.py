"""Term counts of many document texts at once: the fast path of index building.

`tokenize.tokens` reads one text token by token in Python, which is fine for a query but
costs seconds over 10,000 documents. Here the same tokens (search mode: documents) are
counted in three vectorized passes:

1. each text is split at whitespace and its pieces are counted (`str.split` and
   `collections.Counter`, both in C); every distinct piece gets an id. No token spans
   whitespace, so a text's tokens are those of its pieces;
2. each distinct piece is tokenized once for the whole corpus: cut into runs (a CJK run, or
   a Latin compound), Latin compounds through `tokenize.compound` (cached), CJK runs through
   one batched call to the segmenter. Terms are numbered as they are met, by a look-up that
   runs in C over the segmenter's millions of words; each run's terms, then each piece's,
   are ranges of one array of those numbers;
3. numpy expands (text, piece, count) into (text, term, count), renumbers the terms in sorted
   order and sums duplicates: one stable sort of the (text, term) keys with each count packed
   into their low bits.

The result is the bag of terms `tokenize.tokens(text, stopwords, search_mode=True)` gives
each text, with terms numbered in sorted order, plus the compounds an identifier holds inside
it that the corpus also writes as words of their own (`tokenize.inner_compounds`: the
`daemonset` of `KubeDaemonSetMisScheduled`, when some text says `daemonset`).
"""

from __future__ import annotations

import itertools
import unicodedata
from array import array
from collections import Counter, defaultdict
from collections.abc import Collection, Iterable, Sequence
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
    normalized: bool = False,
) -> Bags:
    """The bags of `texts`. Unless `summed`, a (text, term) pair may come more than once (from
    several pieces of the text): `regroup` sums them, and skipping the sum here saves a sort
    when the caller regroups anyway. `surfaces`, when given, is filled with every Latin word
    as written (lowercased) and its term: `replication` → `replic`, `disk` → `disk`.
    `words`: the corpus's words, which an identifier's inner compounds must be among to be
    kept; by default the words of `texts` themselves. `normalized`: the texts are in NFKC
    already (it is idempotent, and costs about 10 ns a character)."""
    frozen = frozenset(stopwords)
    piece_ids: defaultdict[str, int] = defaultdict()
    piece_ids.default_factory = piece_ids.__len__  # a new piece gets the next id
    pieces = array("q")  # 8 bytes an entry: a list of ints would take 36
    counts = array("q")
    sizes = array("q")
    for text in texts:
        counted = Counter((text if normalized else unicodedata.normalize("NFKC", text)).split())
        pieces.extend(map(piece_ids.__getitem__, counted))
        counts.extend(counted.values())
        sizes.append(len(counted))
    piece_ids.default_factory = None  # as in `_numbers`: no cycle left behind
    terms = _Terms(frozen)
    flat, lengths = _piece_terms(list(piece_ids), terms, surfaces, words)
    vocabulary, renumber = terms.sorted(flat)
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    piece = np.frombuffer(pieces, dtype=np.int64)
    unit = np.repeat(np.arange(len(texts), dtype=np.int64), np.frombuffer(sizes, dtype=np.int64))
    count = np.frombuffer(counts, dtype=np.int64)
    term, per = renumber[_gathered(flat, offsets, lengths, piece)], lengths[piece]
    unit, count = np.repeat(unit, per), np.repeat(count, per)
    if summed:
        return _summed(unit, term, count, vocabulary, len(texts))
    return Bags(
        unit.astype(np.int32), term.astype(np.int32), count.astype(np.int32), vocabulary, len(texts)
    )


def _numbers(table: defaultdict[str, int], items: Iterable[str]) -> np.ndarray:
    """The number of each item in `table`, an item not in it numbered next: one pass in C (the
    table's factory is its own length while it runs)."""
    table.default_factory = table.__len__
    try:
        return np.fromiter(map(table.__getitem__, items), np.int64)
    finally:
        table.default_factory = None  # its own method: a cycle would keep it to the next collection


def _gathered(
    flat: np.ndarray, offsets: np.ndarray, lengths: np.ndarray, items: np.ndarray
) -> np.ndarray:
    """The runs `flat[offsets[i]:offsets[i] + lengths[i]]` of each `i` of `items`, one after
    another: one gather, not a Python loop over the items."""
    per = lengths[items]
    total = int(per.sum())
    first = np.repeat(offsets[items] - (np.cumsum(per) - per), per)
    return flat[first + np.arange(total)]


class _Terms:
    """The terms met so far, numbered as met; stopwords and the CJK runs' separator also get a
    number (the segmenter's words are numbered all at once) but are never a term."""

    def __init__(self, stopwords: frozenset[str]) -> None:
        self.stopwords = stopwords
        self.ids: defaultdict[str, int] = defaultdict()

    def numbers(self, words: Iterable[str]) -> np.ndarray:
        """The number of each of `words`; a new word gets the next one."""
        return _numbers(self.ids, words)

    def dropped(self) -> np.ndarray:
        """Whether each number so far is no term (a stopword or the separator)."""
        return np.fromiter(
            (w == _SEPARATOR or w in self.stopwords for w in self.ids), bool, len(self.ids)
        )

    def names(self, numbers: np.ndarray) -> set[str]:
        """The terms numbered in `numbers`."""
        names = list(self.ids)
        return {names[i] for i in np.unique(numbers).tolist()}

    def sorted(self, used: np.ndarray) -> tuple[tuple[str, ...], np.ndarray]:
        """The vocabulary of the terms numbered in `used`, sorted, and each number's position
        in it."""
        names = list(self.ids)
        held = np.zeros(len(names), dtype=bool)
        held[used] = True
        kept = np.flatnonzero(held).tolist()
        vocabulary = tuple(sorted(names[i] for i in kept))
        position = {t: i for i, t in enumerate(vocabulary)}
        renumber = np.zeros(len(names), dtype=np.int64)
        renumber[kept] = [position[names[i]] for i in kept]
        return vocabulary, renumber


def _summed(
    unit: np.ndarray, term: np.ndarray, count: np.ndarray, words: tuple[str, ...], units: int
) -> Bags:
    width = max(len(words), 1)
    key = unit.astype(np.int64) * width + term
    distinct, summed = _sum_by_key(key, count.astype(np.int64), units * width)
    return Bags(
        (distinct // width).astype(np.int32),
        (distinct % width).astype(np.int32),
        summed.astype(np.int32),
        words,
        units,
    )


def _sum_by_key(key: np.ndarray, count: np.ndarray, bound: int) -> tuple[np.ndarray, np.ndarray]:
    """The distinct keys (each under `bound`), ascending, and the sum of the counts of each.
    Each count goes into the low bits of its key and the packed numbers are sorted once,
    stably (numpy's radix and merge sorts use the runs the bags come in: a text's terms
    follow the previous text's): some five times faster than `np.unique` with its inverse,
    an argsort and a gather, over a Chinese corpus's millions of (chunk, term) pairs."""
    count_bits = int(count.max()).bit_length() if len(count) else 1
    if len(key) == 0 or count.min() < 0 or bound.bit_length() + count_bits > 63:
        distinct, inverse = np.unique(key, return_inverse=True)
        return distinct, np.bincount(inverse, weights=count, minlength=len(distinct))
    packed = key << count_bits  # a new array, packed and sorted in place
    packed |= count
    packed.sort(kind="stable")
    keys = packed >> count_bits
    first = np.ones(len(keys), dtype=bool)
    np.not_equal(keys[1:], keys[:-1], out=first[1:])
    starts = np.flatnonzero(first)
    del first
    distinct = keys[starts]
    del keys
    packed &= (1 << count_bits) - 1
    return distinct, np.add.reduceat(packed, starts)


def _piece_terms(
    pieces: list[str],
    terms: _Terms,
    surfaces: dict[str, str] | None,
    words: Collection[str] | None,
) -> tuple[np.ndarray, np.ndarray]:
    """The search-mode terms of each distinct whitespace-free piece of text, as the numbers of
    `terms`: all pieces' terms one after another, and how many each piece has."""
    runs_of = [tokenize.RUN.findall(piece) for piece in pieces]
    run_ids: defaultdict[str, int] = defaultdict()
    run = _numbers(run_ids, itertools.chain.from_iterable(runs_of))
    runs_per_piece = np.fromiter(map(len, runs_of), np.int64, len(runs_of))
    flat, offsets, lengths = _terms_of_runs(list(run_ids), terms, surfaces, words)
    piece = np.repeat(np.arange(len(pieces), dtype=np.int64), runs_per_piece)
    per_piece = np.bincount(piece, weights=lengths[run], minlength=len(pieces)).astype(np.int64)
    return _gathered(flat, offsets, lengths, run), per_piece


def _terms_of_runs(
    runs: list[str],
    terms: _Terms,
    surfaces: dict[str, str] | None,
    words: Collection[str] | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The search-mode terms of each distinct run, as numbers: every run's terms (the CJK
    runs', then the Latin runs'), where each run's start and how many it has. Latin runs
    through `tokenize.compound` (cached), with their inner compounds; CJK runs segmented in
    one call, and its millions of words numbered at once."""
    latin: dict[int, tuple[str, ...]] = {}
    cjk: list[int] = []
    for position, run in enumerate(runs):
        if tokenize.is_cjk_word(run):
            cjk.append(position)
            continue
        found = tokenize.compound(run, terms.stopwords)
        latin[position] = tuple(t.text for t in found)
        if surfaces is not None:
            for token in found:
                if token.raw:
                    surfaces[token.raw] = token.text
    offsets = np.zeros(len(runs), dtype=np.int64)
    lengths = np.zeros(len(runs), dtype=np.int64)
    chinese = np.zeros(0, dtype=np.int64)
    if cjk:
        numbers = terms.numbers(tokenize.segment_for_search(_SEPARATOR.join(runs[p] for p in cjk)))
        separator = terms.ids.get(_SEPARATOR, -1)  # none with one run
        owner = np.cumsum(numbers == separator)  # the k-th run's words follow k separators
        kept = ~terms.dropped()[numbers]
        chinese = numbers[kept]
        lengths[cjk] = np.bincount(owner[kept], minlength=len(cjk))
        offsets[cjk] = np.cumsum(lengths[cjk]) - lengths[cjk]
    if words is None:
        words = {t for found in latin.values() for t in found} | terms.names(chinese)
    _add_inner_compounds(runs, latin, words)
    at = np.fromiter(latin, np.int64, len(latin))
    lengths[at] = np.fromiter(map(len, latin.values()), np.int64, len(latin))
    offsets[at] = len(chinese) + np.cumsum(lengths[at]) - lengths[at]
    flat = np.concatenate((chinese, terms.numbers(itertools.chain.from_iterable(latin.values()))))
    return flat, offsets, lengths


def _add_inner_compounds(
    runs: list[str], latin: dict[int, tuple[str, ...]], words: Collection[str]
) -> None:
    """Each identifier's inner compounds (`tokenize.inner_compounds`) that are words of the
    corpus, added to its run's terms: only a compound some text writes as a word of its own
    (`daemonset`), never a join no one writes (`setmis`), which would only dilute the
    heading's weight."""
    for position, own in latin.items():
        if len(own) < 3:
            continue  # no parts and a whole: no identifier
        extra = tuple(c for c in tokenize.inner_compounds(runs[position]) if c in words)
        extra = tuple(c for c in extra if c not in own)
        if extra:
            latin[position] = own + extra
