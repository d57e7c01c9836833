"""The grading features of a query's candidates (`engine.scoring.FEATURES`), from the index.

For each candidate chunk: how much of the query it covers (in the chunk, and anywhere in its
document), how far its rank is ahead of the best other document, how much of the query its
heading path and tags hold, and how much of its heading path and tags the query names
(docs/retrieval.md#quality-score). Membership is asked of the postings for the candidates only
(`Postings.holds`), never for every chunk.

`heading_coverage` is the weighted share of the candidate's heading terms (its heading path
and document tags, each distinct term once, weighing its BM25 IDF over the chunks) that are
forms of the query's concepts or its whole identifiers: a question about a runbook names most
of what its title names (`KubeHpaMaxedOut` → kube, hpa, max, out), while one that shares a
word or two with a long title is often about something else.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from lookup_knowledge.engine import scoring
from lookup_knowledge.engine.bags import Bags
from lookup_knowledge.engine.postings import Postings, idf_of_all
from lookup_knowledge.engine.query import Concept, Known, ReadQuery

_UNCOVERED = (Known.UNKNOWN, Known.WORD, Known.ABSENT)  # concepts no chunk can hold


@dataclass(frozen=True, slots=True)
class Counted:
    """How the concepts of a query cover its candidates, one row per concept and one column
    per candidate, counted one way (through the thesaurus's bridges or not): `share` of the
    concept ½ in the chunk + ½ in its document, `credit` whether it is held at all, `held`
    in the heading (a bridge counts `scoring.BRIDGE_FACTOR` of each); `counts[i]`: whether
    concept i counts at all."""

    share: np.ndarray
    credit: np.ndarray
    held: np.ndarray
    counts: np.ndarray


@dataclass(frozen=True, slots=True)
class Coverage:
    """What `Grader.coverage` found for one query's candidates, for `Grader.features`: the
    concepts counted through their own forms and through their bridges too, each
    candidate's document, the IDF weight of its heading terms that the query's own forms
    name and that its bridge terms name besides, and the weight of all its heading terms."""

    own: Counted
    bridged: Counted
    docs: np.ndarray
    heading_named: np.ndarray
    bridges_named: np.ndarray
    heading_weight: np.ndarray


class Grader:
    def __init__(
        self,
        *,
        chunk_postings: Postings,
        doc_postings: Postings,
        heading_bags: Bags,
        chunk_doc: np.ndarray,
        heading_texts: Sequence[str],
        vocabulary: Mapping[str, int],
    ) -> None:
        """`heading_bags`: each chunk's heading path and tags, summed (one row per chunk and
        term); `chunk_doc[i]`: the document of chunk i; `heading_texts[i]`: chunk i's heading
        path and tags, normalized (for concepts found verbatim)."""
        self._chunk_postings = chunk_postings
        self._doc_postings = doc_postings
        self._heading_postings = Postings(heading_bags)
        self._chunk_doc = chunk_doc
        self._document_count = doc_postings.unit_count
        self._heading_texts = heading_texts
        self._vocabulary = vocabulary
        self._term_idf = idf_of_all(chunk_postings.document_frequency, chunk_postings.unit_count)
        self._heading_weight = np.bincount(
            heading_bags.unit,
            weights=self._term_idf[heading_bags.term],
            minlength=heading_bags.unit_count,
        )

    def coverage(
        self,
        candidates: np.ndarray,
        read: ReadQuery,
        verbatim: Sequence[np.ndarray | None],
    ) -> Coverage:
        """Which of `candidates` (chunk positions) hold each concept of `read`, in the chunk,
        its document and its heading, through its own forms and through its thesaurus
        bridges; `verbatim[i]`: which chunks hold concept i verbatim (None: see the
        postings). The postings are asked once per query, however many gradings follow."""
        factor = scoring.BRIDGE_FACTOR
        count, size = len(candidates), len(read.concepts)
        candidates = candidates.astype(np.int32)  # the postings' dtype (`Postings.holds`)
        docs = self._chunk_doc[candidates]
        share = np.zeros((size, count))
        held = np.zeros((size, count))
        bridged_share = np.zeros((size, count))
        bridged_credit = np.zeros((size, count))
        bridged_held = np.zeros((size, count))
        own_counts = np.zeros(size, dtype=bool)
        bridged_counts = np.zeros(size, dtype=bool)
        heading_named = np.zeros(count)  # heading term weight the query's own forms name
        named: set[int] = set()
        for i, (concept, where) in enumerate(zip(read.concepts, verbatim, strict=True)):
            if concept.known in _UNCOVERED:
                continue
            bridged_counts[i] = True
            if concept.known is not Known.BRIDGED:
                own_counts[i] = True
                share[i] = (1 - scoring.DOCUMENT_SHARE) * self._in_chunk(
                    concept, where, candidates
                ) + (scoring.DOCUMENT_SHARE * self._in_document(concept, where, docs))
                held[i] = self._in_heading(concept, candidates, named, heading_named)
            if concept.bridges:
                # A concept counts once: through its own forms, or else through its bridges.
                via = Concept(concept.token, concept.bridges, Known.KNOWN)
                through = (1 - scoring.DOCUMENT_SHARE) * self._holds(
                    self._chunk_postings, via, candidates
                ) + scoring.DOCUMENT_SHARE * self._holds(self._doc_postings, via, docs)
                bridged_share[i] = factor * through
                bridged_credit[i] = factor * (through > 0)
                bridged_held[i] = factor * self._holds(self._heading_postings, via, candidates)
        self._name(read.wholes, candidates, named, heading_named)
        bridges_named = np.zeros(count)  # heading term weight the bridge terms name
        self._name(read.bridges, candidates, named, bridges_named)
        credit = (share > 0).astype(np.float64)
        return Coverage(
            own=Counted(share, credit, held, own_counts),
            bridged=Counted(
                np.maximum(share, bridged_share),
                np.maximum(credit, bridged_credit),
                np.maximum(held, bridged_held),
                bridged_counts,
            ),
            docs=docs,
            heading_named=heading_named,
            bridges_named=bridges_named,
            heading_weight=self._heading_weight[candidates],
        )

    def features(
        self,
        coverage: Coverage,
        ranks: np.ndarray,
        weights: np.ndarray,
        *,
        bridges: bool = True,
        rivals: np.ndarray | None = None,
    ) -> np.ndarray:
        """The feature matrix of the candidates of `coverage` with their `ranks`;
        `weights[i]`: the weight of concept i. `bridges`: count the thesaurus's bridge
        terms, each at `scoring.BRIDGE_FACTOR` of what the concept's own forms count (the
        concept's coverage and heading share, the term's heading coverage); without them a
        bridged concept is an unknown one. `rivals`: the ranks at which a candidate counts
        as another document's rival in the margin (default `ranks`)."""
        scope = scoring.scope_weight(weights.tolist())
        # A query of whole identifiers and no weighed concept (`sI 00`: `si` held whole, `00`
        # noise) covers nothing and names no heading through its words: shares of nothing
        # are 0, not NaN.
        per = 1.0 / scope if scope > 0 else 0.0
        counted = coverage.bridged if bridges else coverage.own
        count = len(ranks)
        weight = np.where(counted.counts, weights, 0.0)[:, None]
        # Summed concept by concept, in the query's order (axis 0): the same sums as one
        # concept at a time.
        covered = (weight * counted.share).sum(axis=0)  # weight ½ in the chunk + ½ in its doc
        heaviest = (weight * counted.credit).max(axis=0, initial=0.0)  # the heaviest held
        in_heading = (weight * counted.held).sum(axis=0)  # concept weight found in the heading
        heading_named = coverage.heading_named
        if bridges:
            heading_named = heading_named + scoring.BRIDGE_FACTOR * coverage.bridges_named
        heading_weight = coverage.heading_weight
        best_other = self._best_other(coverage.docs, ranks if rivals is None else rivals)
        return scoring.features(
            support=np.minimum(covered * per, 1.0) - heaviest * per,
            margin=scoring.margin(ranks, best_other),
            heading=in_heading * per,
            heading_coverage=np.divide(
                heading_named,
                heading_weight,
                out=np.zeros(count),
                where=heading_weight > 0,
            ),
        )

    def _in_heading(
        self, concept: Concept, candidates: np.ndarray, named: set[int], heading_named: np.ndarray
    ) -> np.ndarray:
        """Which candidates hold the concept in their heading path or tags; the heading terms
        it names are added to `heading_named` (each term once: `named`)."""
        if concept.known is Known.SUBSTRING:
            texts = self._heading_texts
            return np.array([concept.token in texts[c] for c in candidates.tolist()], dtype=bool)
        held: np.ndarray | None = None
        for variant in concept.variants:
            term = self._vocabulary[variant]
            in_this = self._heading_postings.holds(term, candidates)
            held = in_this if held is None else held | in_this
            if term not in named:
                named.add(term)
                heading_named += self._term_idf[term] * in_this
        return np.zeros(len(candidates), dtype=bool) if held is None else held

    def _name(
        self, words: Sequence[str], candidates: np.ndarray, named: set[int], into: np.ndarray
    ) -> None:
        """Add to `into` the IDF weight of each of `words` not `named` yet, where a
        candidate's heading path or tags hold it (each term once: `named`)."""
        for word in words:
            term = self._vocabulary[word]
            if term not in named:
                named.add(term)
                into += self._term_idf[term] * self._heading_postings.holds(term, candidates)

    def _best_other(self, docs: np.ndarray, ranks: np.ndarray) -> np.ndarray:
        """Each candidate's best rank of a candidate of any other document."""
        best = np.zeros(self._document_count)
        np.maximum.at(best, docs, ranks)
        if len(best) == 1:
            return np.zeros(len(docs))
        first = int(best.argmax())  # the first of the best: a stable sort's first
        top = float(best[first])
        best[first] = -np.inf
        runner_up = float(best.max())
        other: np.ndarray = np.where(docs == first, runner_up, top)
        return other

    def _in_chunk(
        self, concept: Concept, where: np.ndarray | None, candidates: np.ndarray
    ) -> np.ndarray:
        """Which candidates hold the concept (`where`: which chunks do, for a verbatim one)."""
        if where is not None:
            held: np.ndarray = where[candidates]
            return held
        return self._holds(self._chunk_postings, concept, candidates)

    def _in_document(
        self, concept: Concept, where: np.ndarray | None, docs: np.ndarray
    ) -> np.ndarray:
        """Which of `docs` hold the concept (`where`: which chunks do, for a verbatim one)."""
        if where is not None:
            held = np.zeros(self._document_count, dtype=bool)
            held[self._chunk_doc[where]] = True
            in_docs: np.ndarray = held[docs]
            return in_docs
        return self._holds(self._doc_postings, concept, docs)

    def _holds(self, postings: Postings, concept: Concept, units: np.ndarray) -> np.ndarray:
        vocabulary = self._vocabulary
        first, *others = concept.variants
        held = postings.holds(vocabulary[first], units)
        for variant in others:
            held |= postings.holds(vocabulary[variant], units)
        return held
