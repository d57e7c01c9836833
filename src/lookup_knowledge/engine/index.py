"""The search index: BM25 (bm25s) recalls candidates, the coverage score grades and orders them.

Each chunk is indexed as its title, its document's front-matter `tags`, its breadcrumb and its
content; the title is given twice (it also opens the breadcrumb), which weights a document's
topic over words used in passing. Tags are the author's own summary of the topic, often in the
other language or in the words people search with (`慢查询`, `slowlog`, `memory usage high`),
so every section of a document inherits them like it inherits the title. A search:

1. tokenizes the query (precise segmentation, stopwords dropped, a Chinese word no chunk
   contains re-read by the dictionary alone; no terms → no candidates) and adds each term's
   Chinese/English equivalents from `engine.glossary`;
2. scores every chunk allowed by the filters with BM25 and keeps the best `RECALL_LIMIT`
   chunks that share at least one term with the query (`recall_count`);
3. grades each candidate with the absolute `quality_score` of `engine.scoring`, drops those
   under the reference threshold, and orders the rest by evidence strength (the quality
   score before its cap at 1, so phrase evidence still orders fully covered chunks), then
   BM25, then position in the corpus (deterministic). The service trusts the order alone, so the
   best-covered chunk comes first and the grade of the first hit is the grade of the answer.

bm25s was chosen because it is a small, dependency-light (numpy/scipy) BM25 with sparse
precomputed scores: indexing a few hundred chunks takes milliseconds, a query is one sparse
row sum. The corpus is small and fits in memory, so there is no persistence to manage.
"""

from __future__ import annotations

import itertools
import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

import bm25s
import numpy as np

from lookup_knowledge.engine import glossary, scoring, tokenize
from lookup_knowledge.engine.markdown import Chunk, Document

logger = logging.getLogger(__name__)

RECALL_LIMIT = 200  # candidates graded per query; far more than any top_k a caller uses


class NoEvidenceBasis(StrEnum):
    NO_CANDIDATES = "no_candidates"  # no chunk shares a single term with the query
    ALL_BELOW_THRESHOLD = "all_below_threshold"  # candidates exist, none covers enough


@dataclass(frozen=True, slots=True)
class Hit:
    chunk: Chunk
    quality_score: float
    bm25_score: float

    @property
    def level(self) -> scoring.Level:
        level = scoring.level_for(self.quality_score)
        assert level is not None, "hits under the reference threshold are never returned"
        return level


@dataclass(frozen=True, slots=True)
class SearchResult:
    hits: tuple[Hit, ...]
    recall_count: int
    no_evidence_basis: NoEvidenceBasis | None


@dataclass(frozen=True, slots=True)
class _IndexedChunk:
    chunk: Chunk
    document: Document
    terms: frozenset[str]
    pairs: frozenset[tuple[str, str]]
    text: str  # normalized title + tags + breadcrumb + content, for CJK substring matches


class KnowledgeIndex:
    """An immutable in-memory index over parsed documents; safe to share between threads."""

    def __init__(self, documents: Sequence[Document]) -> None:
        self.documents = tuple(documents)
        self._chunks: list[_IndexedChunk] = []
        corpus_tokens: list[list[str]] = []
        for document in self.documents:
            tags = ", ".join(document.tags)
            for chunk in document.chunks:
                text = "\n".join((chunk.title, tags, chunk.breadcrumb, chunk.content))
                tokens = tokenize.index_tokens(text)
                corpus_tokens.append(tokens)
                self._chunks.append(
                    _IndexedChunk(
                        chunk,
                        document,
                        frozenset(tokens),
                        _near_pairs(tokens),
                        tokenize.normalize(text),
                    )
                )
        if not self._chunks:
            raise ValueError("cannot build an index without chunks")
        self._document_frequency = Counter(t for c in self._chunks for t in c.terms)
        self._corpus_text = "\0".join(c.text for c in self._chunks)
        self._bm25 = bm25s.BM25()
        self._bm25.index(corpus_tokens, show_progress=False)
        logger.info("indexed %d documents, %d chunks", len(self.documents), len(self._chunks))

    @property
    def chunk_count(self) -> int:
        return len(self._chunks)

    def search(
        self, query: str, *, top_k: int, filters: Mapping[str, str] | None = None
    ) -> SearchResult:
        """Chunks that cover at least half the query, best first, at most `top_k`."""
        tokens = self._query_tokens(query)
        terms = list(dict.fromkeys(tokens))
        allowed = self._filter_mask(filters or {})
        if not terms or not allowed.any():
            return SearchResult((), 0, NoEvidenceBasis.NO_CANDIDATES)

        variants = {t: glossary.variants(t) for t in terms}
        recall_terms = list(dict.fromkeys(v for t in terms for v in sorted(variants[t])))
        scores = self._bm25.get_scores(recall_terms, weight_mask=allowed.astype(np.float32))
        candidates = np.flatnonzero(scores > 0)
        if len(candidates) > RECALL_LIMIT:
            candidates = candidates[np.argsort(-scores[candidates], kind="stable")[:RECALL_LIMIT]]
        if len(candidates) == 0:
            return SearchResult((), 0, NoEvidenceBasis.NO_CANDIDATES)

        n = len(self._chunks)
        df = self._document_frequency
        # A term's weight is that of its most common form: "内存" is as informative as "memory".
        weights = {t: scoring.idf(max(df.get(v, 0) for v in variants[t]), n) for t in terms}
        pairs = [
            frozenset(itertools.product(variants[a], variants[b]))
            for a, b in dict.fromkeys(itertools.pairwise(tokens))
            if a != b
        ]
        graded: list[tuple[float, float, int]] = []
        for position in candidates.tolist():
            indexed = self._chunks[position]
            strength = scoring.evidence_strength(
                weights,
                {t for t in terms if any(_covers(indexed, v) for v in variants[t])},
                pairs_total=len(pairs),
                pairs_found=sum(1 for pair in pairs if not pair.isdisjoint(indexed.pairs)),
            )
            if scoring.cap(strength) >= scoring.REFERENCE_THRESHOLD:
                graded.append((strength, float(scores[position]), position))
        graded.sort(key=lambda item: (-item[0], -item[1], item[2]))
        hits = tuple(
            Hit(self._chunks[position].chunk, scoring.cap(strength), bm25)
            for strength, bm25, position in graded[:top_k]
        )
        basis = None if hits else NoEvidenceBasis.ALL_BELOW_THRESHOLD
        return SearchResult(hits, len(candidates), basis)

    def _query_tokens(self, query: str) -> list[str]:
        """The query's tokens; a Chinese word no chunk contains is re-read by the dictionary.

        jieba's HMM can glue a stopword onto a word (`有大`) or join characters into a word the
        corpus never uses, which would then weigh as the rarest term. Such a word is replaced by
        its dictionary reading when that reading has a word the corpus knows (`有大` → `大`),
        and dropped when it is all stopwords; a truly unknown word (`红烧肉`) stays unknown.
        """
        tokens: list[str] = []
        for token in tokenize.query_tokens(query):
            if len(token) > 1 and tokenize.is_cjk_word(token) and not self._knows(token):
                pieces = tokenize.dictionary_words(token)
                if not pieces:
                    continue
                if pieces != [token] and any(self._knows(piece) for piece in pieces):
                    tokens.extend(pieces)
                    continue
            tokens.append(token)
        return tokens

    def _knows(self, term: str) -> bool:
        """Whether some chunk contains the term, a glossary equivalent, or (CJK) its text."""
        if any(v in self._document_frequency for v in glossary.variants(term)):
            return True
        return len(term) > 1 and tokenize.is_cjk_word(term) and term in self._corpus_text

    def _filter_mask(self, filters: Mapping[str, str]) -> np.ndarray:
        return np.array(
            [all(c.document.matches(k, v) for k, v in filters.items()) for c in self._chunks],
            dtype=bool,
        )


def _covers(indexed: _IndexedChunk, term: str) -> bool:
    # jieba can segment a word differently inside running text than alone in a query (it
    # depends on the neighbours), so a multi-character CJK query word also counts when it
    # appears verbatim in the chunk. Latin words do not get this: "log" is not in "catalog".
    if term in indexed.terms:
        return True
    return len(term) >= 2 and tokenize.is_cjk_word(term) and term in indexed.text


def _near_pairs(tokens: list[str]) -> frozenset[tuple[str, str]]:
    """Ordered token pairs at most `PHRASE_WINDOW` positions apart."""
    return frozenset(
        pair
        for gap in range(1, scoring.PHRASE_WINDOW + 1)
        for pair in zip(tokens, tokens[gap:], strict=False)
    )
