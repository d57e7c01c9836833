"""The search index: BM25 over chunks and their documents ranks; the calibrated coverage grades.

Each chunk is indexed as its title, its document's front-matter `tags`, its breadcrumb and its
content (the title also opens the breadcrumb, so it counts twice: a document's topic weighs
more than words used in passing), counted for all chunks at once (`engine.bags`). Each
document is indexed too, as all its chunks together, and each chunk's heading path and tags
apart (for the heading grading features). A search:

1. reads the query against the corpus (`engine.query`): concepts with weights, typos mapped
   to the corpus word they stand for, ids dropped; nothing known → no candidates. Acronyms
   the corpus defines (`engine.acronyms`) add the other side of a named acronym or expansion
   to the query's whole identifiers; an identifier the query names (`engine.identifiers`)
   that the corpus misspells or shortens adds the corpus's own, and one it lacks in every
   form becomes a concept no chunk covers;
2. ranks every chunk the filters allow (no filter: no mask at all) by BM25 over the chunk
   plus `DOCUMENT_MIX` × BM25 over its whole document, so a section is found through the
   rest of its runbook too, plus `TITLE_MIX` × BM25 over its document's title field (the
   title and the file name's words) when the query names most of that field: the page
   devoted to a topic before a neighbour with a section on it. A whole identifier of the
   query counts in full and names a title that holds it. The best `RECALL_LIMIT` chunks
   with a positive score are the candidates (`recall_count`); their order adds
   `BIGRAM_MIX` × the BM25 of the query's CJK character bigrams (`engine.ngrams`), which
   survives segmentation errors and is no part of the rank the grade reads;
3. grades each candidate with the absolute `quality_score` of `engine.scoring` (support
   beyond one word, margin, heading both ways: `engine.grading`; calibrated), keeps those at
   or above the reference threshold in that order, and returns the first `top_k`. Equal
   ranks fall to the better graded, then to the longer chunk (the substantive one), then to
   corpus order.
"""

from __future__ import annotations

import functools
import logging
import re
import threading
import unicodedata
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from lookup_knowledge.engine import fuzzy, scoring, tokenize
from lookup_knowledge.engine import query as query_reading
from lookup_knowledge.engine.acronyms import CorpusAcronyms
from lookup_knowledge.engine.bags import Bags, bags
from lookup_knowledge.engine.bilingual import LOAD_DELAY_S, Translations
from lookup_knowledge.engine.building import collector_paused
from lookup_knowledge.engine.fuzzy import Neighbours
from lookup_knowledge.engine.grading import Grader
from lookup_knowledge.engine.identifiers import CasedNames, CorpusIdentifiers
from lookup_knowledge.engine.identifiers import named as named_identifiers
from lookup_knowledge.engine.lexicon import Lexicon
from lookup_knowledge.engine.markdown import Chunk, Document, filter_key
from lookup_knowledge.engine.ngrams import ChunkBigrams
from lookup_knowledge.engine.postings import Postings, idf, idf_of_all
from lookup_knowledge.engine.query import Concept, Known, ReadQuery, read_query
from lookup_knowledge.engine.redirects import redirects

logger = logging.getLogger(__name__)

RECALL_LIMIT = 200  # candidates graded per query; far more than any top_k a caller uses
DOCUMENT_MIX = 0.3  # weight of the whole document's BM25 in a chunk's rank
VARIANT_MAX = True
WHOLE_FACTOR = 1.0  # weight of a whole identifier's BM25 next to its parts'
BRIDGE_RANK_FACTOR = 0.5  # weight of a thesaurus bridge term's BM25 (docs/retrieval.md)
TITLE_MIX = 1.0  # weight of the title field's BM25 in a chunk's rank (docs/retrieval.md#ranking)
TITLE_NAMED = 0.67  # share of its title field's IDF weight a query names for it to count
FILTER_CACHE = 1024  # filters whose matching documents a search keeps (`_documents_matching`)
BIGRAM_MIX = 0.1  # weight of the CJK bigrams' BM25 in the order, not the grade (engine.ngrams)
# A query of one subject that more than this share of the pages hold, and more than
# `COMMON_SUBJECT_PAGES` of them, names no page's topic (`Error.`, `有告警`): no candidates,
# unless the titles of one to `COMMON_SUBJECT_PAGES` pages hold it (`限流`, `OOM`: those pages
# are about it) (docs/retrieval.md#reading-the-query)
COMMON_SUBJECT_SHARE = 0.2
COMMON_SUBJECT_PAGES = 3
COMMON_SUBJECT_TITLES = 0.1  # ... or of up to this share of the pages, when that is more


class NoEvidenceBasis(StrEnum):
    NO_CANDIDATES = "no_candidates"  # the query holds nothing the corpus knows
    ALL_BELOW_THRESHOLD = "all_below_threshold"  # candidates exist, none covers enough


@dataclass(frozen=True, slots=True)
class Hit:
    chunk: Chunk
    quality_score: float
    rank_score: float

    @property
    def level(self) -> scoring.Level | None:
        """PRECISE / REFERENCE, or None for a hit under the reference threshold after the first."""
        return scoring.level_for(self.quality_score)


@dataclass(frozen=True, slots=True)
class Graded:
    """Every candidate of one query: chunk positions, ranks, grading features, quality."""

    candidates: np.ndarray
    ranks: np.ndarray
    features: np.ndarray  # (candidates, len(scoring.FEATURES))
    quality: np.ndarray
    order: np.ndarray  # candidate indices, best first

    @property
    def recall_count(self) -> int:
        return len(self.candidates)


@dataclass(frozen=True, slots=True)
class SearchResult:
    hits: tuple[Hit, ...]
    recall_count: int
    no_evidence_basis: NoEvidenceBasis | None


class KnowledgeIndex:
    """An immutable in-memory index over parsed documents; safe to share between threads."""

    def __init__(self, documents: Sequence[Document], lexicon: Lexicon | None = None) -> None:
        with collector_paused():
            self._build(documents, lexicon)

    def _build(self, documents: Sequence[Document], lexicon: Lexicon | None) -> None:
        self.documents = tuple(documents)
        self.lexicon = lexicon or Lexicon.load()
        self._chunks: list[Chunk] = []
        chunk_doc: list[int] = []
        texts: list[str] = []
        headings: list[str] = []
        placeholders = 0
        # A page that only points to another page of the corpus is not indexed: that page
        # answers in its place, under the stub's name too when it differs (`engine.redirects`).
        self.redirects = redirects(self.documents, self._has_text, self.lexicon.pointers)
        aliases = _with_display_titles(self.documents, self.redirects.aliases(self.documents))
        for number, document in enumerate(self.documents):
            if number in self.redirects.targets:
                continue
            tags = ", ".join((*document.tags, *aliases.get(number, ())))
            for chunk in document.chunks:
                # A section yet to be written (`TODO`) is no evidence (`engine.placeholders`).
                if self.lexicon.placeholders.match(chunk.content):
                    placeholders += 1
                    continue
                # A heading's or a list item's ordinal (`2. Check …`) is no word of the chunk.
                texts.append(tokenize.strip_enumeration(f"{chunk.title}\n{chunk.content}"))
                path = " > ".join(map(tokenize.strip_enumeration, chunk.breadcrumb.split(" > ")))
                headings.append(f"{path}\n{tags}")
                self._chunks.append(chunk)
                chunk_doc.append(number)
        if not self._chunks:
            if placeholders:
                raise ValueError(
                    f"cannot build an index: all {placeholders} chunks are placeholders"
                    " (`TODO` and the like: engine/data/placeholders.txt)"
                )
            raise ValueError("cannot build an index without chunks")
        self.placeholder_count = placeholders
        self._chunk_doc = np.array(chunk_doc, dtype=np.int32)
        self._indexed_documents = len(set(chunk_doc))
        self._lengths = np.array([len(c.content) for c in self._chunks], dtype=np.int32)
        stopwords = self.lexicon.stopwords
        # One pass over the heading paths (with tags) and the rest of each chunk's text; a
        # chunk's bag is both together.
        count = len(self._chunks)
        surfaces: dict[str, str] = {}  # each Latin word as written → its term
        # Each text in NFKC once, for its bags, its heading's features and the verbatim text
        # alike (about 10 ns a character, a fifth of a Chinese corpus's build when it was
        # done three times). A newline is a boundary no normalization crosses: a heading and
        # its text normalize apart as they do together.
        headings = [unicodedata.normalize("NFKC", h) for h in headings]
        texts = [unicodedata.normalize("NFKC", t) for t in texts]
        both = bags(
            [*headings, *texts], stopwords, summed=False, surfaces=surfaces, normalized=True
        )
        words = both.words
        chunk_bags = both.regroup(np.tile(np.arange(count, dtype=np.int32), 2), count)
        heading_bags = both.first(count)
        self._vocabulary = {t: i for i, t in enumerate(words)}
        self._chunk_postings = Postings(chunk_bags)
        self._doc_postings = Postings(chunk_bags.regroup(self._chunk_doc, len(self.documents)))
        # Each document's title field; its weight is the sum of its terms' IDF over the chunks.
        self._title_postings = Postings(
            _title_bags(self.documents, aliases, words, self._vocabulary, stopwords)
        )
        self._title_weight = self._title_postings.unit_sums(
            idf_of_all(self._chunk_postings.document_frequency, count)
        )
        # The heading path and tags are part of the chunk's text: their words are all known.
        self._grader = Grader(
            chunk_postings=self._chunk_postings,
            doc_postings=self._doc_postings,
            heading_bags=heading_bags,
            chunk_doc=self._chunk_doc,
            heading_texts=[h.lower() for h in headings],
            vocabulary=self._vocabulary,
        )
        frequency = self._chunk_postings.document_frequency.tolist()
        self._frequency = frequency  # chunks holding each term, as ints (`_weight`)
        self._neighbours = Neighbours(words, frequency)
        # The same, among the words as written: a typo is of what was typed, not of its stem
        # (`nothing` is far from `another`, though its stem `noth` is one edit from `anoth`).
        self._surfaces = surfaces
        self._written: dict[str, list[str]] = {}  # each term → its words as written
        for surface, term in surfaces.items():
            self._written.setdefault(term, []).append(surface)
        self._surface_neighbours = Neighbours(
            list(surfaces), [frequency[self._vocabulary[t]] for t in surfaces.values()]
        )
        self._aliases = aliases
        self._start_lazy_parts()
        # One string for verbatim CJK matches; chunk i is text[starts[i]:starts[i + 1] - 1].
        normalized = [f"{h}\n{t}".lower() for h, t in zip(headings, texts, strict=True)]
        self._text = "\0".join(normalized) + "\0"
        self._starts = np.cumsum([0, *(len(t) + 1 for t in normalized)]).astype(np.int64)
        self._bigrams = ChunkBigrams(self._text, self._starts, self._chunk_doc, len(self.documents))
        # The log noise the tokens leave out (addresses, long numbers, ids), by chunk: a query
        # that names one of these runs names something the corpus documents.
        noise: dict[str, list[int]] = {}
        for position, text in enumerate(normalized):
            for run in tokenize.noise_runs(text):
                noise.setdefault(run, []).append(position)
        self._noise_runs = {r: np.array(c, dtype=np.int64) for r, c in noise.items()}
        self._matching: dict[tuple[str, str], np.ndarray] = {}  # `_documents_matching`
        # The endings of the host names the chunks write (`svc.cluster.local`): what of a query's
        # host names counts (`_host_as_written`), found once here, not by scanning the text.
        self._host_endings: set[str] = set()
        for text in normalized:
            self._host_endings |= tokenize.host_endings(text)
        logger.info(
            "indexed %d documents, %d chunks (%d placeholder chunks left out)",
            len(self.documents),
            len(self._chunks),
            placeholders,
        )

    def _start_lazy_parts(self) -> None:
        """The parts found after the build, on a timer or by the first query that needs them
        (identifiers, cased names, translations, acronyms); none of them is stored with the
        index (`engine.index_store`): each starts again, as here, in the process that reads it."""
        words = list(self._vocabulary)
        self._identifiers = CorpusIdentifiers(words)
        self._cased_names = CasedNames(_titles_and_names(self.documents, self._aliases))
        self._translations = Translations(
            (w for w in words if tokenize.is_cjk_word(w)),
            self._vocabulary.__contains__,
            self.lexicon.stopwords,
        )
        self._acronyms = CorpusAcronyms(
            functools.partial(_texts, self.documents), self.lexicon.stopwords
        )

    # What a stored index holds (`engine.index_store`): every built part, without the lazy
    # ones (their locks and timers belong to one process) and the filters' cache.
    _LAZY = frozenset({"_identifiers", "_cased_names", "_translations", "_acronyms", "_matching"})

    def __getstate__(self) -> dict[str, object]:
        return {k: v for k, v in self.__dict__.items() if k not in self._LAZY}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        self._matching = {}
        self._start_lazy_parts()
        # A build loads the segmenter and the stemmer; an index read back has not, and the
        # first query would wait for them (a sixth of a second): loaded like the lazy parts.
        timer = threading.Timer(LOAD_DELAY_S, tokenize.warm_up)
        timer.daemon = True
        timer.start()

    def _has_text(self, document: Document) -> bool:
        """Whether a document has a chunk to index: one that is no placeholder."""
        return any(not self.lexicon.placeholders.match(c.content) for c in document.chunks)

    @property
    def chunk_count(self) -> int:
        return len(self._chunks)

    def chunk(self, position: int) -> Chunk:
        return self._chunks[position]

    def read(self, query: str) -> ReadQuery:
        query = self._cased_names.restore(query, self._identifiers.nearest, self._unknown_name)
        query = tokenize.HOST_NAME.sub(self._host_as_written, query)
        read = read_query(
            query,
            self.lexicon,
            has_term=self._vocabulary.__contains__,
            in_text=self._in_text,
            nearest=self._typo_of,
            translate=self._translations,
            respell=self._translations.respell,
            held_verbatim=self._holds_run,
            is_name=self._translations.is_name,
            is_word=self._translations.is_word,
            is_written=self._translations.is_written_word,
            is_common=self._translations.is_common_word,
        )
        extra = self._acronyms.get().wholes(read, self._vocabulary.__contains__)
        near, absent = self._look_up_identifiers(query, (*read.wholes, *extra))
        if not (extra or near or absent):
            return read
        wholes = (*read.wholes, *extra, *near)
        return ReadQuery((*read.concepts, *absent), wholes, read.joined)

    def _look_up_identifiers(
        self, query: str, wholes: Sequence[str]
    ) -> tuple[list[str], list[Concept]]:
        """The corpus identifiers the query's misspelt or shortened ones stand for, and a
        concept for each one the corpus lacks in every form (`engine.identifiers`)."""
        near: list[str] = []
        absent: list[Concept] = []
        for identifier in named_identifiers(tokenize.strip_log_structure(query)):
            if identifier in self._vocabulary or self._identifiers.holds(identifier):
                continue
            found = self._identifiers.nearest(identifier)
            if found is None:
                absent.append(Concept(identifier, (), Known.ABSENT))
            elif found not in wholes and found not in near:
                near.append(found)
        return near, absent

    def search(
        self, query: str, *, top_k: int, filters: Mapping[str, str] | None = None
    ) -> SearchResult:
        """Chunks whose quality reaches the reference threshold, best ranked first."""
        graded = self.grade(query, filters)
        if isinstance(graded, NoEvidenceBasis):
            return SearchResult((), 0, graded)
        order, quality = graded.order, graded.quality
        if quality[order[0]] < scoring.REFERENCE_THRESHOLD:
            return SearchResult((), graded.recall_count, NoEvidenceBasis.ALL_BELOW_THRESHOLD)
        # The first hit, then the others down to HIT_FLOOR, in order: picked at once, not by
        # walking every candidate.
        rest = order[1:]
        shown = np.concatenate((order[:1], rest[quality[rest] >= scoring.HIT_FLOOR]))[:top_k]
        hits = tuple(
            Hit(self._chunks[position], score, rank)
            for position, score, rank in zip(
                graded.candidates[shown].tolist(),
                quality[shown].tolist(),
                graded.ranks[shown].tolist(),
                strict=True,
            )
        )
        return SearchResult(hits, graded.recall_count, None)

    def grade(
        self, query: str, filters: Mapping[str, str] | None = None
    ) -> Graded | NoEvidenceBasis:
        """Every candidate ranked and graded, no threshold applied (also for calibration)."""
        read = self.read(query)
        allowed = self._filter_mask(filters) if filters else None
        verbatim = [self._verbatim(c) for c in read.concepts]
        if self._refusal(read, allowed, verbatim) is not None:
            return NoEvidenceBasis.NO_CANDIDATES
        weights = np.array(
            [self._weight(c, v) for c, v in zip(read.concepts, verbatim, strict=True)]
        )
        own_rank, title_rank = self._rank(read, verbatim)  # title_rank: its title field part
        rank = own_rank + self._bridge_rank(read) if read.bridges else own_rank
        if allowed is not None:
            rank[~allowed] = 0.0
        candidates = np.flatnonzero(rank > 0)  # chunks holding some word of the query
        # The hits' order adds the CJK bigrams' BM25 to the words' rank; the grade reads the
        # words' rank alone (its margin was calibrated on it).
        ordering = rank[candidates]
        pairs = self._bigrams.terms(tokenize.normalize(query)) if BIGRAM_MIX else []
        if pairs:
            ordering = ordering + BIGRAM_MIX * self._bigrams.rank(pairs, DOCUMENT_MIX)[candidates]
        if len(candidates) > RECALL_LIMIT:
            top = np.argpartition(-ordering, RECALL_LIMIT - 1)[:RECALL_LIMIT]
            candidates, ordering = candidates[top], ordering[top]
        if len(candidates) == 0:
            return NoEvidenceBasis.NO_CANDIDATES
        ranks = rank[candidates]
        # Each candidate's lead is over the other documents' ranks without their title field:
        # a title puts its page first, and is no evidence against a second topic's page.
        titled = title_rank[candidates]
        coverage = self._grader.coverage(candidates, read, verbatim)
        features = self._grader.features(coverage, ranks, weights, rivals=ranks - titled)
        quality = scoring.quality(features)
        if read.bridges:
            # The thesaurus lifts a grade at most to REFERENCE, and never lowers one: a hit
            # keeps the grade the query's own words give it (its own rank, bridged concepts
            # as unknown words), and the bridged grade above it is capped under PRECISE unless
            # the own grade is PRECISE already.
            own_weights = np.array(
                [
                    self._weight(Concept(c.token, (), Known.UNKNOWN), None)
                    if c.known is Known.BRIDGED
                    else w
                    for c, w in zip(read.concepts, weights.tolist(), strict=True)
                ]
            )
            own = scoring.quality(
                self._grader.features(
                    coverage,
                    own_rank[candidates],
                    own_weights,
                    bridges=False,
                    rivals=own_rank[candidates] - titled,
                )
            )
            capped = np.minimum(quality, scoring.BRIDGED_CAP)
            quality = np.maximum(own, np.where(own >= scoring.PRECISE_THRESHOLD, quality, capped))
        if self.lexicon.set_up_question(query):
            # A runbook answers what is wrong; how to set something up, at best for reference,
            # unless the question and the hit's heading say mostly the same, either way round:
            # a page about that very task (`engine.cues`).
            named = (features[:, list(scoring.HEADINGS)] >= scoring.SET_UP_NAMED).any(axis=1)
            quality = np.where(named, quality, np.minimum(quality, scoring.SET_UP_CAP))
        order = np.lexsort(
            (candidates, -self._lengths[candidates], -quality, -np.round(ordering, 6))
        )
        return Graded(candidates, ordering, features, quality, order)

    def why_no_candidates(self, query: str, filters: Mapping[str, str] | None = None) -> str:
        """Why a query has no candidates, in words (`pyrag explain`); "" when it has some."""
        read = self.read(query)
        allowed = self._filter_mask(filters) if filters else None
        refusal = self._refusal(read, allowed, [self._verbatim(c) for c in read.concepts])
        if refusal is not None:
            return refusal
        graded = self.grade(query, filters)
        return "no chunk holds a word of it" if isinstance(graded, NoEvidenceBasis) else ""

    def _refusal(
        self, read: ReadQuery, allowed: np.ndarray | None, verbatim: list[np.ndarray | None]
    ) -> str | None:
        """Why a query has no candidates before any chunk is ranked, in words; None if it may
        have some."""
        if read.empty:
            return (
                "no word of it that the corpus holds names a subject: what it holds are typos, "
                "thesaurus words, counts, discourse words or none"
            )
        if allowed is not None and not allowed.any():
            return "its filter matches no page"
        subject = read.sole_subject
        if subject is None:
            return None
        pages = self._subject_pages(subject, verbatim[read.concepts.index(subject)], allowed)
        if not self._common(*pages):
            return None
        held, titled, searched = pages
        return (
            f"its one subject word, {subject.token!r}, is on {held} of the {searched} pages "
            f"searched and in the titles of {titled}: a word on more than "
            f"{COMMON_SUBJECT_SHARE:.0%} of them, and more than {COMMON_SUBJECT_PAGES}, names "
            "no page unless the titles of a few hold it"
        )

    def _subject_pages(
        self, concept: Concept, verbatim: np.ndarray | None, allowed: np.ndarray | None
    ) -> tuple[int, int, int]:
        """How many of the pages a search may return (all, or those of its filter) hold the
        concept, how many of them in their title, and how many pages it may return."""
        titles = [self._title_postings.units(self._vocabulary[v]) for v in concept.variants]
        titled = np.concatenate(titles) if titles else np.zeros(0, dtype=np.int32)
        if verbatim is not None:
            pages = self._chunk_doc[verbatim]
        else:
            held = [self._doc_postings.units(self._vocabulary[v]) for v in concept.variants]
            pages = np.concatenate(held) if held else np.zeros(0, dtype=np.int32)
        if allowed is None:
            return len(np.unique(pages)), len(np.unique(titled)), self._indexed_documents
        within = np.unique(self._chunk_doc[allowed])
        return (
            len(np.intersect1d(pages, within)),
            len(np.intersect1d(titled, within)),
            len(within),
        )

    @staticmethod
    def _common(held: int, titled: int, searched: int) -> bool:
        """Whether a subject names no page: more than `COMMON_SUBJECT_SHARE` of the pages
        searched hold it, and more than `COMMON_SUBJECT_PAGES` (in a small corpus, or a narrow
        filter, a word of a few pages still names them), and the titles of none of them or of
        more than `COMMON_SUBJECT_PAGES` (or `COMMON_SUBJECT_TITLES` of the pages) do: a word a
        few titles hold names those pages."""
        named = 1 <= titled <= max(COMMON_SUBJECT_PAGES, COMMON_SUBJECT_TITLES * searched)
        return not named and held > max(COMMON_SUBJECT_SHARE * searched, COMMON_SUBJECT_PAGES)

    def _verbatim(self, concept: Concept) -> np.ndarray | None:
        """Which chunks hold a concept found verbatim in their text (None: any other concept,
        whose chunks are in the postings)."""
        if concept.known is not Known.SUBSTRING:
            return None
        present = np.zeros(len(self._chunks), dtype=bool)
        if concept.token in self._noise_runs:  # a log token, as a whole run of the text
            present[self._noise_runs[concept.token]] = True
            return present
        if len(concept.token) > 1 and tokenize.is_cjk_word(concept.token):  # its pairs' chunks
            present[
                [c for c in self._pair_chunks(concept.token) if self._chunk_has(c, concept.token)]
            ] = True
            return present
        start = self._text.find(concept.token)
        while start >= 0:
            chunk = int(np.searchsorted(self._starts, start, side="right")) - 1
            present[chunk] = True
            start = self._text.find(concept.token, int(self._starts[chunk + 1]))
        return present

    def _weight(self, concept: Concept, verbatim: np.ndarray | None) -> float:
        n = len(self._chunks)
        if concept.known is Known.UNKNOWN:
            lone = len(concept.token) == 1 and tokenize.is_cjk_word(concept.token)
            factor = query_reading.SINGLE_CHARACTER_FACTOR if lone else 1.0
            return factor * query_reading.UNKNOWN_FACTOR * idf(0, n)
        if concept.known is Known.WORD:
            return query_reading.WORD_FACTOR * idf(0, n)
        if concept.known is Known.ABSENT:
            return query_reading.ABSENT_FACTOR * idf(0, n)
        df = (
            int(np.count_nonzero(verbatim))
            if verbatim is not None
            else max(
                self._frequency[self._vocabulary[v]] for v in (concept.variants or concept.bridges)
            )
        )
        factor = query_reading.TYPO_FACTOR if concept.known is Known.TYPO else 1.0
        if len(concept.token) == 1:  # a lone character (`满`, `v`): often a fragment
            factor *= query_reading.SINGLE_CHARACTER_FACTOR
        return factor * idf(df, n)

    def _rank(
        self, read: ReadQuery, verbatim: list[np.ndarray | None]
    ) -> tuple[np.ndarray, np.ndarray]:
        chunks = np.zeros(len(self._chunks), dtype=np.float64)
        docs = np.zeros(len(self.documents), dtype=np.float64)
        titles = np.zeros(len(self.documents), dtype=np.float64)  # title field BM25
        named = np.zeros(len(self.documents), dtype=np.float64)  # title weight named
        for concept, where in zip(read.concepts, verbatim, strict=True):
            factor = query_reading.TYPO_FACTOR if concept.known is Known.TYPO else 1.0
            self._title_scores(concept, factor, titles, named)
            if concept.known is Known.SUBSTRING and where is not None:
                weight = idf(int(np.count_nonzero(where)), len(self._chunks))
                chunks[where] += weight
                np.add.at(docs, self._chunk_doc[where], weight)
                continue
            if len(concept.variants) == 1 or not VARIANT_MAX:
                for variant in concept.variants:
                    self._add(chunks, docs, self._vocabulary[variant], factor)
                continue
            # A concept counts once: its best-matching form, not the sum of its synonyms.
            best_chunks = np.zeros_like(chunks)
            best_docs = np.zeros_like(docs)
            for variant in concept.variants:
                term = self._vocabulary[variant]
                self._chunk_postings.max_scores(
                    best_chunks, term, factor * self._chunk_postings.idf(term)
                )
                self._doc_postings.max_scores(
                    best_docs, term, factor * self._doc_postings.idf(term)
                )
            chunks += best_chunks
            docs += best_docs
        for whole in read.wholes:
            self._add(chunks, docs, self._vocabulary[whole], WHOLE_FACTOR)
            # A whole identifier names a title that holds it (`KubeSchedulerDown`, its
            # runbook's), besides the parts it shares with it.
            whole_concept = Concept(whole, (whole,), Known.KNOWN)
            self._title_scores(whole_concept, WHOLE_FACTOR, titles, named)
        # A title counts only when the query names most of it: the page is then about what
        # the query asks, where one shared title word (`Pod`, `DNS`) is a neighbour's.
        about = named >= TITLE_NAMED * self._title_weight
        titles = np.where(about & (named > 0), TITLE_MIX * titles, 0.0)
        return chunks + (DOCUMENT_MIX * docs + titles)[self._chunk_doc], titles[self._chunk_doc]

    def _title_scores(
        self, concept: Concept, factor: float, titles: np.ndarray, named: np.ndarray
    ) -> None:
        """Add a concept's best title-field BM25 to `titles`, and the IDF of each of its forms
        a title field holds to `named` (a field in two languages holds two of them)."""
        if len(concept.variants) == 1:  # its best form is its one form: no maximum to take
            term = self._vocabulary[concept.variants[0]]
            weight = self._chunk_postings.idf(term)
            self._title_postings.add_scores(titles, term, factor * weight)
            self._title_postings.mark(named, term, weight)
            return
        best = np.zeros_like(titles)
        for variant in concept.variants:
            term = self._vocabulary[variant]
            weight = self._chunk_postings.idf(term)
            self._title_postings.max_scores(best, term, factor * weight)
            self._title_postings.mark(named, term, weight)
        titles += best

    def _bridge_rank(self, read: ReadQuery) -> np.ndarray:
        """What the thesaurus's bridge terms add to each chunk's rank."""
        chunks = np.zeros(len(self._chunks), dtype=np.float64)
        docs = np.zeros(len(self.documents), dtype=np.float64)
        for bridge in read.bridges:
            self._add(chunks, docs, self._vocabulary[bridge], BRIDGE_RANK_FACTOR)
        return chunks + DOCUMENT_MIX * docs[self._chunk_doc]

    def _add(self, chunks: np.ndarray, docs: np.ndarray, term: int, factor: float) -> None:
        self._chunk_postings.add_scores(chunks, term, factor * self._chunk_postings.idf(term))
        self._doc_postings.add_scores(docs, term, factor * self._doc_postings.idf(term))

    def _typo_of(self, word: str, typed: str) -> str | None:
        """The corpus term a word the corpus lacks misspells (`engine.fuzzy`), or None. A word
        the stemmer changed is compared as typed with the corpus's words as written; one it
        left alone is compared as a term first (a term the corpus also writes near it:
        `_edits_as_typed`), then as written (`terminatng` is far from the term `termin`, one
        edit from `terminating`), and the written word wins when it is the nearer."""
        # Words as written equally far from what was typed: the one whose term is nearest
        # the typo's stem (`compation`, stem `compat`: `compactions` before `completion`).
        limit = fuzzy.max_distance(typed)
        written = self._surface_neighbours.nearest(
            typed,
            lambda w: fuzzy.damerau_levenshtein(word, self._surfaces[w], limit),
        )
        if typed == word:
            found = self._neighbours.nearest(word)
            edits = self._edits_as_typed(typed, found) if found is not None else limit + 1
            # The term, unless a word the corpus writes is nearer what was typed: `revison`
            # is two edits from the term `reason`, one from the word `revision`.
            if edits <= limit and (
                written is None or fuzzy.damerau_levenshtein(typed, written, limit) >= edits
            ):
                return found
        return None if written is None else self._surfaces[written]

    def _edits_as_typed(self, typed: str, term: str) -> int:
        """The edits from a word as typed to the nearest of the ways the corpus writes `term`
        (a term the corpus writes in no Latin word of its own is taken at its word: 0): the
        term `kubedn` of `kubedns` is two edits from `kubeadm`, the word three."""
        written = self._written.get(term)
        if not written:
            return 0
        limit = fuzzy.max_distance(typed)
        return min(fuzzy.damerau_levenshtein(typed, w, limit) for w in written)

    def _unknown_name(self, word: str) -> bool:
        """Whether a lower-case Latin word is no term of the corpus and no English word (the
        dictionary's words are looked up by their stems, as the query's are)."""
        stem = tokenize.stem(word)
        return (
            word not in self._vocabulary
            and stem not in self._vocabulary
            and self._translations.is_name(stem)
        )

    def _host_as_written(self, match: re.Match[str]) -> str:
        """A host name of the query, as far as the corpus writes it: its longest ending of
        two labels or more that ends a host name some chunk writes (`svc.cluster.local` of
        `payments.prod.svc.cluster.local`, `registry.k8s.io` whole), else nothing. The rest
        names the asker's own machines and services (`api.partner-pay.com`), which no page
        is about, and whose words (`partner`, `pay`) would match pages by chance."""
        labels = match.group(0).rstrip(".").split(".")
        for start in range(len(labels) - 1):
            ending = ".".join(labels[start:])
            if ending.lower() in self._host_endings:
                return f" {ending} "
        return " "

    def _in_text(self, word: str) -> bool:
        """Whether some chunk's text holds `word` verbatim. A Chinese word is looked for only
        in the chunks that hold its every pair of characters (the CJK bigram postings), not
        in the whole text: a scan of 10,000 Chinese pages takes some 35 ms, and a query of
        random characters asks this of thousands of words."""
        if len(word) > 1 and tokenize.is_cjk_word(word):
            return any(self._chunk_has(c, word) for c in self._pair_chunks(word))
        return word in self._text

    def _pair_chunks(self, word: str) -> list[int]:
        return self._bigrams.chunks_holding(word).tolist()  # type: ignore[no-any-return]

    def _chunk_has(self, chunk: int, word: str) -> bool:
        starts = self._starts
        return self._text.find(word, int(starts[chunk]), int(starts[chunk + 1])) >= 0

    def _holds_run(self, token: str) -> bool:
        """Whether some chunk holds a log token (an address, a long number, an id) as a whole
        run of its text."""
        return token in self._noise_runs

    def _filter_mask(self, filters: Mapping[str, str]) -> np.ndarray:
        """Which chunks' documents match every filter."""
        matching = np.ones(len(self.documents), dtype=bool)
        for key, value in filters.items():
            matching &= self._documents_matching(key, value)
        return matching[self._chunk_doc]

    def _documents_matching(self, key: str, value: str) -> np.ndarray:
        """Which documents match `key=value`, asked of every document once per filter: an
        agent sends the same few (a category, a tag), and asking 10,000 documents took 6.6
        ms of a search. Kept for at most `FILTER_CACHE` filters (the index never changes)."""
        asked = filter_key(key, value)
        found = self._matching.get(asked)
        if found is None:
            found = np.array([d.matches(key, value) for d in self.documents], dtype=bool)
            if len(self._matching) >= FILTER_CACHE:
                self._matching.clear()
            self._matching[asked] = found
        return found


def _with_display_titles(
    documents: Sequence[Document], aliases: dict[int, tuple[str, ...]]
) -> dict[int, tuple[str, ...]]:
    """`aliases`, with each page's front-matter `title` where it has words its title lacks:
    the name a site shows for the page (`Kubelet Pod Lifecycle Event Generator Duration
    High` above `# KubeletPlegDurationHigh`) is one of its names."""
    found = dict(aliases)
    for number, document in enumerate(documents):
        shown = document.front_matter.get("title", "").strip()
        if shown and _new_words(shown, document.title):
            found[number] = (*found.get(number, ()), shown)
    return found


def _new_words(shown: str, title: str) -> bool:
    """Whether `shown` says words `title` does not, other than as spacing, case or a number
    (`Kube State Metric sWatch Errors` is `# KubeStateMetricsWatchErrors`, misspaced; a
    name's digits are no words of a title)."""
    squashed = re.sub(r"[\W_]+", "", shown).lower()
    return squashed != re.sub(r"[\W_]+", "", title).lower() and not (
        _title_words(shown) <= _title_words(title)
    )


_TITLE_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+|[^\W\d_]")


def _title_words(title: str) -> set[str]:
    """A title's words, identifiers cut at their case changes (`NodeNetworkReceiveErrs` →
    node, network, receive, errs), lowercased; any other letter (a CJK character) alone, since
    `磁盘满了` and `磁盘 满了` say the same."""
    return {w.lower() for w in _TITLE_WORD.findall(title)}


def _title_bags(
    documents: Sequence[Document],
    aliases: Mapping[int, Sequence[str]],
    words: tuple[str, ...],
    vocabulary: Mapping[str, int],
    stopwords: Collection[str],
) -> Bags:
    """Each document's title field: its title and the words of its file name
    (`handle/memory-fragmentation.md` → memory fragmentation), which name a page in
    English whatever its language; terms numbered as in `vocabulary`, the index of `words`
    (a term the chunks do not hold can never be named and is left out)."""
    fields = []
    for number, document in enumerate(documents):
        stem = document.source.rsplit("/", 1)[-1].split(".", 1)[0]
        parts = [w for w in re.split(r"[\W_]+", stem) if w and w != "index"]
        names = [document.title, *aliases.get(number, ())]  # a renamed page's old name too
        fields.append(" ".join([*map(tokenize.strip_enumeration, names), *parts]))
    found = bags(fields, stopwords, words=vocabulary)
    numbers = np.array([vocabulary.get(w, -1) for w in found.words], dtype=np.int64)
    term = numbers[found.term]
    kept = term >= 0
    return Bags(
        found.unit[kept], term[kept].astype(np.int32), found.count[kept], words, len(documents)
    )


def _titles_and_names(
    documents: Sequence[Document], aliases: Mapping[int, Sequence[str]]
) -> Iterator[str]:
    """Each document's title, old names and file name (`kubernetes/KubePodCrashLooping.md`
    → `KubePodCrashLooping`), the names its page is about."""
    for number, document in enumerate(documents):
        yield document.title
        yield from aliases.get(number, ())
        yield document.source.rsplit("/", 1)[-1].removesuffix(".md")


def _texts(documents: Sequence[Document]) -> Iterator[str]:
    """Each document's text in its original case (for its acronyms)."""
    for document in documents:
        yield "\n".join(f"{c.title}\n{c.content}" for c in document.chunks)
