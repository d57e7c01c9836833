"""Character bigrams of CJK text: a second ranking field that does not depend on segmentation.

jieba cuts a question and a page's sentence by its dictionary and its guesses, and the two
cuts do not always meet: a title's `抓包` is segmented `抓 / 包`, a colloquial compound of
a question is one unknown word, a verb glued to the following noun is a word no page holds.
Every pair of adjacent CJK characters of a chunk's text (its heading path, tags, title and
content) is indexed as a term of its own, in chunk and document postings (`engine.postings`,
BM25 as for words), and a question's CJK bigrams score it the same way: `ChunkBigrams.rank`
is added to the word rank at `engine.index.BIGRAM_MIX` (docs/retrieval.md#ranking).

A bigram counts once per question; bigrams no chunk holds are left out; Latin text has none,
so a corpus or a question without CJK characters pays only for one regex scan.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Sequence

import numpy as np

from lookup_knowledge.engine.bags import Bags
from lookup_knowledge.engine.postings import Postings

# The CJK ideographs `engine.tokenize` reads as CJK runs.
_CJK_RUN = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]{2,}")


def bigrams(text: str) -> list[str]:
    """Every pair of adjacent CJK characters of `text` (NFKC-normalized), in order."""
    runs = _CJK_RUN.findall(unicodedata.normalize("NFKC", text))
    return [run[i : i + 2] for run in runs for i in range(len(run) - 1)]


class ChunkBigrams:
    """BM25 postings of the CJK bigrams of each chunk and of each document."""

    def __init__(self, texts: Sequence[str], chunk_doc: np.ndarray, document_count: int) -> None:
        """`texts[i]`: chunk i's full text; `chunk_doc[i]`: its document."""
        ids: dict[str, int] = {}
        units: list[int] = []
        terms: list[int] = []
        counts: list[int] = []
        for unit, text in enumerate(texts):
            if not _CJK_RUN.search(text):
                continue
            for pair, count in Counter(bigrams(text)).items():
                units.append(unit)
                terms.append(ids.setdefault(pair, len(ids)))
                counts.append(count)
        self._ids = ids
        self.empty = not ids
        found = Bags(
            np.array(units, dtype=np.int32),
            np.array(terms, dtype=np.int32),
            np.array(counts, dtype=np.int32),
            tuple(ids),
            len(texts),
        )
        self._chunk_doc = chunk_doc
        self._chunks = Postings(found)
        self._documents = Postings(found.regroup(chunk_doc, document_count))

    def terms(self, query: str) -> list[int]:
        """The distinct bigrams of `query` some chunk holds, as term numbers."""
        if self.empty:
            return []
        found = (self._ids.get(pair) for pair in dict.fromkeys(bigrams(query)))
        return [term for term in found if term is not None]

    def rank(self, terms: Sequence[int], document_mix: float) -> np.ndarray:
        """Each chunk's BM25 over its bigrams plus `document_mix` × its document's."""
        chunks = np.zeros(self._chunks.unit_count)
        documents = np.zeros(self._documents.unit_count)
        for term in terms:
            self._chunks.add_scores(chunks, term, self._chunks.idf(term))
            self._documents.add_scores(documents, term, self._documents.idf(term))
        ranked: np.ndarray = chunks + document_mix * documents[self._chunk_doc]
        return ranked

    @property
    def nbytes(self) -> int:
        return self._chunks.nbytes + self._documents.nbytes
