"""Compact inverted index with BM25 term weights: term → (unit ids, tf weights), in numpy arrays.

A unit is a chunk or a whole document. For each term the postings hold the units that contain
it and BM25's saturated term frequency `tf·(k1+1) / (tf + k1·(1 − b + b·len/avglen))`; the IDF
is applied at query time. Memory is a few bytes per (term, unit) pair, so a 10k-document corpus
stays within tens of megabytes.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence

import numpy as np

K1 = 1.2
B = 0.75


class Postings:
    def __init__(self, units: Sequence[Counter[str]], vocabulary: Mapping[str, int]) -> None:
        """`units[i]` counts the terms of unit i; `vocabulary` maps every term to its id."""
        self.unit_count = len(units)
        lengths = np.array([sum(c.values()) for c in units], dtype=np.float64)
        average = float(lengths.mean()) if len(units) and lengths.mean() > 0 else 1.0
        term_ids: list[int] = []
        unit_ids: list[int] = []
        frequencies: list[int] = []
        for unit, unit_counts in enumerate(units):
            for term, tf in unit_counts.items():
                term_ids.append(vocabulary[term])
                unit_ids.append(unit)
                frequencies.append(tf)
        terms = np.array(term_ids, dtype=np.int32)
        order = np.argsort(terms, kind="stable")
        self._units = np.array(unit_ids, dtype=np.int32)[order]
        tf_sorted = np.array(frequencies, dtype=np.float32)[order]
        norm = K1 * (1 - B + B * lengths[self._units] / average)
        self._weights = (tf_sorted * (K1 + 1) / (tf_sorted + norm)).astype(np.float32)
        counts_per_term = np.bincount(terms, minlength=len(vocabulary))
        self._offsets = np.concatenate(([0], np.cumsum(counts_per_term))).astype(np.int64)
        self.document_frequency = counts_per_term.astype(np.int32)

    def idf(self, term_id: int | None) -> float:
        """BM25's IDF over these units; a term in no unit gets the largest."""
        df = 0 if term_id is None else int(self.document_frequency[term_id])
        return idf(df, self.unit_count)

    def add_scores(self, scores: np.ndarray, term_id: int, factor: float) -> None:
        """scores[unit] += factor · bm25 weight, for every unit holding the term."""
        start, end = self._offsets[term_id], self._offsets[term_id + 1]
        scores[self._units[start:end]] += factor * self._weights[start:end]

    def mark(self, present: np.ndarray, term_id: int) -> None:
        present[self._units[self._offsets[term_id] : self._offsets[term_id + 1]]] = True

    @property
    def nbytes(self) -> int:
        return int(self._units.nbytes + self._weights.nbytes + self._offsets.nbytes)


def idf(document_frequency: int, unit_count: int) -> float:
    return math.log(1 + (unit_count - document_frequency + 0.5) / (document_frequency + 0.5))
