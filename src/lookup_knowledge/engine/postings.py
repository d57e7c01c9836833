"""Compact inverted index with BM25 term weights: term → (unit ids, tf weights), in numpy arrays.

A unit is a chunk or a whole document. For each term the postings hold the units that contain
it and BM25's saturated term frequency `tf·(k1+1) / (tf + k1·(1 − b + b·len/avglen))`; the IDF
is applied at query time. Memory is a few bytes per (term, unit) pair, so a 10k-document corpus
stays within tens of megabytes.
"""

from __future__ import annotations

import math

import numpy as np

from lookup_knowledge.engine.bags import Bags

K1 = 1.2
B = 0.75
MARK_UNITS = 16384  # up to this many units, `holds` marks them all instead of searching
DENSE_CELLS = 1_500_000  # up to this many (term, unit) cells, the postings keep dense tables
DENSE_ROW_SHARE = 8  # beyond them, a term in 1/8 of the units or more keeps a dense row
DENSE_ROW_BYTES = 24 * 2**20  # for at most this much, the most frequent terms first


class Postings:
    def __init__(self, bags: Bags) -> None:
        """The postings of `bags` (a unit is a chunk or a whole document)."""
        self.unit_count = bags.unit_count
        lengths = np.bincount(bags.unit, weights=bags.count, minlength=bags.unit_count)
        average = float(lengths.mean()) if bags.unit_count and lengths.mean() > 0 else 1.0
        # A stable sort by term; of 16-bit numbers numpy's is a radix sort, five times faster
        # than its merge sort of 32-bit ones (a Chinese corpus's character pairs: 3.4 million
        # postings of under 6,000 pairs in 10,000 pages).
        terms = bags.term.astype(np.uint16) if len(bags.words) <= 1 << 16 else bags.term
        order = np.argsort(terms, kind="stable")
        self._units = bags.unit[order].astype(np.int32)
        tf = bags.count[order].astype(np.float32)
        norm = K1 * (1 - B + B * lengths[self._units] / average)
        self._weights = (tf * (K1 + 1) / (tf + norm)).astype(np.float32)
        counts_per_term = np.bincount(bags.term, minlength=len(bags.words))
        self._offsets = np.concatenate(([0], np.cumsum(counts_per_term))).astype(np.int64)
        self.document_frequency = counts_per_term.astype(np.int32)
        self._idf: dict[int | None, float] = {}  # `idf`, of the terms asked so far
        # A small corpus (the bundled KB: 4,279 terms × 276 chunks) also keeps its postings
        # dense, 5 bytes a cell (6 MB there): which units hold each term and the term's BM25
        # weight in each. The some 40 `holds` and 20 score updates of a search are then one
        # row each, where gathering and scattering a few units cost numpy's fixed overhead.
        # Rows are exact: a unit without the term adds 0.0, and keeps its maximum (scores
        # are never negative).
        self._table: np.ndarray | None = None
        self._dense_weights: np.ndarray | None = None
        if len(counts_per_term) * bags.unit_count <= DENSE_CELLS:
            self._table = np.zeros((len(counts_per_term), bags.unit_count), dtype=bool)
            self._table[bags.term, bags.unit] = True
            terms = np.repeat(np.arange(len(counts_per_term)), counts_per_term)
            self._dense_weights = np.zeros(
                (len(counts_per_term), bags.unit_count), dtype=np.float32
            )
            self._dense_weights[terms, self._units] = self._weights
        # A large corpus keeps a dense row for its most frequent terms only (4 bytes a unit):
        # adding a term held by a third of 40,000 chunks to the scores is one pass over a
        # row, where scattering into its units costs up to eight times as much.
        self._rows: dict[int, np.ndarray] = {}
        if self._table is None and bags.unit_count:
            frequent = np.flatnonzero(counts_per_term * DENSE_ROW_SHARE >= bags.unit_count)
            frequent = frequent[np.argsort(-counts_per_term[frequent], kind="stable")]
            for term_id in frequent[: DENSE_ROW_BYTES // (4 * bags.unit_count)].tolist():
                row = np.zeros(bags.unit_count, dtype=np.float32)
                start, end = self._offsets[term_id], self._offsets[term_id + 1]
                row[self._units[start:end]] = self._weights[start:end]
                self._rows[term_id] = row

    def idf(self, term_id: int | None) -> float:
        """BM25's IDF over these units; a term in no unit gets the largest. Kept once asked:
        a search asks it of the same few terms many times, and a numpy scalar's `int` and a
        logarithm cost more than a look-up."""
        found = self._idf.get(term_id)
        if found is None:
            df = 0 if term_id is None else int(self.document_frequency[term_id])
            found = self._idf[term_id] = idf(df, self.unit_count)
        return found

    def add_scores(self, scores: np.ndarray, term_id: int, factor: float) -> None:
        """scores[unit] += factor · bm25 weight, for every unit holding the term."""
        if self._dense_weights is not None:  # a unit without the term adds 0.0, exactly
            scores += factor * self._dense_weights[term_id]
            return
        row = self._rows.get(term_id)
        if row is not None:
            scores += factor * row
            return
        start, end = self._offsets[term_id], self._offsets[term_id + 1]
        scores[self._units[start:end]] += factor * self._weights[start:end]

    def max_scores(self, scores: np.ndarray, term_id: int, factor: float) -> None:
        """scores[unit] = max(scores[unit], factor · bm25 weight), for every unit holding the
        term (each unit once in a term's postings)."""
        if self._dense_weights is not None:
            np.maximum(scores, factor * self._dense_weights[term_id], out=scores)
            return
        row = self._rows.get(term_id)
        if row is not None:
            np.maximum(scores, factor * row, out=scores)
            return
        start, end = self._offsets[term_id], self._offsets[term_id + 1]
        units = self._units[start:end]
        scores[units] = np.maximum(scores[units], factor * self._weights[start:end])

    def mark(self, scores: np.ndarray, term_id: int, value: float) -> None:
        """scores[unit] += value, for every unit holding the term (its frequency aside)."""
        if self._table is not None:
            scores += value * self._table[term_id]
            return
        row = self._rows.get(term_id)
        if row is not None:  # BM25 weights are positive: a unit holds the term where > 0
            scores += value * (row > 0)
            return
        start, end = self._offsets[term_id], self._offsets[term_id + 1]
        scores[self._units[start:end]] += value

    def unit_sums(self, term_weights: np.ndarray) -> np.ndarray:
        """Each unit's sum of `term_weights[term]` over the distinct terms it holds."""
        terms = np.repeat(np.arange(len(self.document_frequency)), self.document_frequency)
        sums: np.ndarray = np.bincount(
            self._units, weights=term_weights[terms], minlength=self.unit_count
        )
        return sums

    def units(self, term_id: int) -> np.ndarray:
        """The units holding the term, in ascending order, each once."""
        held: np.ndarray = self._units[self._offsets[term_id] : self._offsets[term_id + 1]]
        return held

    def holds(self, term_id: int, units: np.ndarray) -> np.ndarray:
        """Which of `units` (int32) hold the term.

        Over many units, a binary search of `units` in the term's units (kept in ascending
        order, each once) looks only at the candidates; `units` of another dtype would make
        numpy convert the postings at each call. Over a few thousand units, marking them all
        costs less than the searches' fixed overhead.
        """
        if self._table is not None:
            in_table: np.ndarray = self._table[term_id][units]
            return in_table
        row = self._rows.get(term_id)
        if row is not None:
            in_row: np.ndarray = row[units] > 0
            return in_row
        held = self.units(term_id)
        if self.unit_count <= MARK_UNITS:
            marked = np.zeros(self.unit_count, dtype=bool)
            marked[held] = True
            in_marked: np.ndarray = marked[units]
            return in_marked
        found: np.ndarray = held.searchsorted(units, "right") > held.searchsorted(units)
        return found

    @property
    def nbytes(self) -> int:
        dense = sum(t.nbytes for t in (self._table, self._dense_weights) if t is not None)
        dense += sum(row.nbytes for row in self._rows.values())
        return int(self._units.nbytes + self._weights.nbytes + self._offsets.nbytes + dense)


def idf_of_all(document_frequency: np.ndarray, unit_count: int) -> np.ndarray:
    """`idf` of every term at once."""
    df = document_frequency.astype(np.float64)
    weights: np.ndarray = np.log1p((unit_count - df + 0.5) / (df + 0.5))
    return weights


def idf(document_frequency: int, unit_count: int) -> float:
    return math.log(1 + (unit_count - document_frequency + 0.5) / (document_frequency + 0.5))
