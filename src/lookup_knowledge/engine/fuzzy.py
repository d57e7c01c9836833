"""Typo recall: the corpus word a misspelt query word most likely meant (character n-grams).

A query word the corpus does not know (`consumre`, `dsik`, `replciation`) is looked up among
the corpus's own Latin words through their character bigrams (with start and end markers, so
short words and transpositions still share some): the words sharing the most bigrams are
candidates, and the one within a small Damerau–Levenshtein distance (1 for words of up to 6
letters, 2 above) that the most chunks use wins. Nothing is corrected towards a word the
corpus does not hold, and words shorter than 4 letters are never corrected (too many
neighbours). The bigram table holds each vocabulary word once: a few bytes per word.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

MIN_LENGTH = 4
CANDIDATES = 40


def bigrams(word: str) -> list[str]:
    padded = f"^{word}$"
    return [padded[i : i + 2] for i in range(len(padded) - 1)]


def max_distance(word: str) -> int:
    return 1 if len(word) <= 6 else 2


def correctable(word: str) -> bool:
    return len(word) >= MIN_LENGTH and word.isascii() and word.isalpha()


class Neighbours:
    def __init__(self, words: Sequence[str], frequency: Sequence[int]) -> None:
        """`words` are corpus terms; `frequency[i]` is how many chunks hold `words[i]`."""
        self._words = [w for w in words if correctable(w)]
        index = {w: i for i, w in enumerate(words)}
        self._frequency = np.array([frequency[index[w]] for w in self._words], dtype=np.int32)
        grams: dict[str, list[int]] = {}
        for position, word in enumerate(self._words):
            for gram in set(bigrams(word)):
                grams.setdefault(gram, []).append(position)
        self._grams = {g: np.array(ids, dtype=np.int32) for g, ids in grams.items()}

    def nearest(self, word: str, tie: Callable[[str], int] | None = None) -> str | None:
        """The corpus word `word` is most likely a misspelling of, or None: the fewest edits,
        then the lowest `tie(candidate)` when given, then the most chunks."""
        if not correctable(word) or not self._words:
            return None
        lists = [self._grams[g] for g in set(bigrams(word)) if g in self._grams]
        if not lists:
            return None
        overlap = np.bincount(np.concatenate(lists), minlength=len(self._words))
        count = min(CANDIDATES, int(np.count_nonzero(overlap)))
        if count == 0:
            return None
        top = np.argpartition(-overlap, count - 1)[:count]
        limit = max_distance(word)
        best: tuple[int, int, int, str] | None = None
        for position in top.tolist():
            candidate = self._words[position]
            if abs(len(candidate) - len(word)) > limit or candidate == word:
                continue
            distance = damerau_levenshtein(word, candidate, limit)
            if distance > limit:
                continue
            key = (
                distance,
                0 if tie is None else tie(candidate),
                -int(self._frequency[position]),
                candidate,
            )
            if best is None or key < best:
                best = key
        return best[-1] if best is not None else None

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in self._grams.values()) + int(self._frequency.nbytes)


def damerau_levenshtein(a: str, b: str, limit: int) -> int:
    """Optimal string alignment distance, cut short once every path exceeds `limit`."""
    previous2: list[int] = []
    previous = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        current = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            value = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                value = min(value, previous2[j - 2] + 1)
            current[j] = value
        if min(current) > limit:
            return limit + 1
        previous2, previous = previous, current
    return previous[len(b)]
