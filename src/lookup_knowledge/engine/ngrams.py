"""Character bigrams of CJK text: a second ranking field that does not depend on segmentation.

jieba cuts a question and a page's sentence by its dictionary and its guesses, and the two
cuts do not always meet: a title's `抓包` is segmented `抓 / 包`, a colloquial compound of
a question is one unknown word, `到后端` is read `到后 / 端`. Every pair of adjacent CJK
characters of a chunk's text (its heading path, tags, title and content) is a term of its
own, in chunk and document postings (`engine.postings`, BM25 as for words), and a question's
CJK bigrams score the chunks the same way: `ChunkBigrams.rank`, which `engine.index` adds to
the order of the hits (docs/retrieval.md#cjk-character-bigrams).

A bigram counts once per question; bigrams no chunk holds are left out. The pairs are found
in one numpy pass over the corpus's text (its code points); an ASCII corpus or question is
not read at all.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from lookup_knowledge.engine import tokenize
from lookup_knowledge.engine.bags import Bags
from lookup_knowledge.engine.postings import Postings

_PLANE = 0x110000  # a bigram's key: first code point × _PLANE + second
_KEY_BITS = 41  # bits of a bigram's key: _PLANE ** 2 < 2 ** 41


_BLOCK = 1 << 20  # characters read at once: bounds the memory a large corpus needs
SHORT_TEXT = 512  # up to this many characters, a query's pairs are read character by character


def _pairs(text: str) -> tuple[np.ndarray, np.ndarray]:
    """Where each pair of adjacent CJK characters of `text` starts, and its key, in order."""
    starts, keys = [], []
    if text.isascii():  # a flag of the string: no scan
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    for begin in range(0, max(len(text) - 1, 0), _BLOCK):
        block = text[begin : begin + _BLOCK + 1]  # one more: a pair across the boundary
        points = np.frombuffer(block.encode("utf-32-le"), dtype=np.uint32)
        cjk = np.zeros(len(points), dtype=bool)
        for low, high in tokenize.CJK_RANGES:  # the CJK runs of the tokens
            cjk |= (points >= low) & (points <= high)
        at = np.flatnonzero(cjk[:-1] & cjk[1:])
        starts.append(at + begin)
        keys.append(points[at].astype(np.int64) * _PLANE + points[at + 1])
    if not starts:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return np.concatenate(starts), np.concatenate(keys)


def bigram_keys(text: str) -> np.ndarray:
    """The key of every pair of adjacent CJK characters of `text` (NFKC-normalized by the
    caller), in order."""
    return _pairs(text)[1]


def bigrams(text: str) -> list[str]:
    """Every pair of adjacent CJK characters of `text`, in order (as strings)."""
    return [chr(k // _PLANE) + chr(k % _PLANE) for k in bigram_keys(text).tolist()]


def _counted(
    unit: np.ndarray, keys: np.ndarray, chunk_count: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each distinct (chunk, pair key) of the corpus, ordered, and how often the chunk holds
    it: one sort of a key that holds both (a pair's key is under 2**41), where numbering the
    pairs first and then the (chunk, number)s took two sorts of every pair of the text; a
    Chinese corpus has about as many pairs as characters."""
    if chunk_count >= 1 << (63 - _KEY_BITS):  # too many chunks for one key: a sort per part
        order = np.lexsort((keys, unit))
        unit, keys = unit[order], keys[order]
        first = np.ones(len(keys), dtype=bool)
        first[1:] = (unit[1:] != unit[:-1]) | (keys[1:] != keys[:-1])
        starts = np.flatnonzero(first)
        return unit[starts], keys[starts], np.diff(np.append(starts, len(keys)))
    # Stably: the text's pairs come chunk by chunk, runs that numpy's stable sort uses.
    packed = np.sort((unit.astype(np.int64) << _KEY_BITS) | keys, kind="stable")
    first = np.ones(len(packed), dtype=bool)
    first[1:] = packed[1:] != packed[:-1]
    starts = np.flatnonzero(first)
    held = packed[starts]
    counts = np.diff(np.append(starts, len(packed)))
    return held >> _KEY_BITS, held & ((1 << _KEY_BITS) - 1), counts


def _chunk_pairs(text: str, starts: np.ndarray, chunk_count: int) -> tuple[np.ndarray, Bags]:
    """The pair keys the chunks hold (sorted: the vocabulary) and each chunk's bag of them.
    Its own function, so that the arrays of every pair of the text are let go before the
    postings are built (some 100 MB for 10,000 Chinese pages)."""
    at, keys = _pairs(text)
    unit = np.searchsorted(starts, at, side="right") - 1
    units, pairs, counts = _counted(unit, keys, chunk_count)
    vocabulary = np.unique(pairs)
    found = Bags(
        units.astype(np.int32),
        np.searchsorted(vocabulary, pairs).astype(np.int32),
        counts.astype(np.int32),
        ("",) * len(vocabulary),  # the terms are keys, not words: only the count is read
        chunk_count,
    )
    return vocabulary, found


class ChunkBigrams:
    """BM25 postings of the CJK bigrams of each chunk and of each document."""

    def __init__(
        self, text: str, starts: np.ndarray, chunk_doc: np.ndarray, document_count: int
    ) -> None:
        """`text`: every chunk's normalized text, chunk i at `text[starts[i]:starts[i + 1]]`
        (chunks separated by a character that is not CJK); `chunk_doc[i]`: its document."""
        self._keys, found = _chunk_pairs(text, starts, len(chunk_doc))
        self._chunk_doc = chunk_doc
        self._chunks = Postings(found)
        self._documents = Postings(found.regroup(chunk_doc, document_count))

    @property
    def empty(self) -> bool:
        return len(self._keys) == 0

    def terms(self, query: str) -> list[int]:
        """The distinct bigrams of `query` (normalized) some chunk holds, as term numbers."""
        if self.empty or query.isascii():
            return []
        if len(query) <= SHORT_TEXT:  # a question: a set of pairs costs less than numpy's passes
            found = {
                ord(a) * _PLANE + ord(b)
                for a, b in itertools.pairwise(query)
                if tokenize.is_cjk_word(a + b)
            }
            keys = np.array(sorted(found), dtype=np.int64)
        else:
            keys = np.unique(bigram_keys(query))
        if len(keys) == 0:
            return []
        at = np.searchsorted(self._keys, keys)
        at = np.minimum(at, len(self._keys) - 1)
        held: list[int] = at[self._keys[at] == keys].tolist()
        return held

    def chunks_holding(self, word: str) -> np.ndarray:
        """The chunks that hold every pair of adjacent characters of `word` (a CJK word,
        normalized), in ascending order: every chunk whose text holds the word is one of
        them, and for a word of two characters they are exactly those; for one character,
        every chunk (`KnowledgeIndex._in_text`, `KnowledgeIndex._verbatim`)."""
        if len(word) < 2:  # no pair to tell by: any chunk may hold it
            return np.arange(self._chunks.unit_count, dtype=np.int32)
        if self.empty:
            return np.zeros(0, dtype=np.int32)
        keys = np.unique([ord(a) * _PLANE + ord(b) for a, b in itertools.pairwise(word)])
        at = np.minimum(np.searchsorted(self._keys, keys), len(self._keys) - 1)
        if not (self._keys[at] == keys).all():
            return np.zeros(0, dtype=np.int32)
        # The rarest pair first: each intersection is then no longer than its postings.
        terms = sorted(at.tolist(), key=lambda term: len(self._chunks.units(term)))
        held = self._chunks.units(terms[0])
        for term in terms[1:]:
            if not len(held):
                break
            held = np.intersect1d(held, self._chunks.units(term), assume_unique=True)
        return held

    def rank(self, terms: Sequence[int], document_mix: float) -> np.ndarray:
        """Each chunk's BM25 over its bigrams plus `document_mix` × its document's."""
        chunks = np.zeros(self._chunks.unit_count)
        documents = np.zeros(self._documents.unit_count)
        for term in terms:
            self._chunks.add_scores(chunks, term, self._chunks.idf(term))
            self._documents.add_scores(documents, term, self._documents.idf(term))
        ranked: np.ndarray = chunks + document_mix * documents[self._chunk_doc]
        return ranked
