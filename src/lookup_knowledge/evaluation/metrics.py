"""Retrieval metrics at document level, and the calibration of the grades.

A ranking is the agent's evidence mapped to documents, best first, each document once (two
chunks of one runbook are one answer). Relevance is binary in the golden cases (an expected
document has gain 1); `ndcg_at_k` also takes graded gains.

Calibration asks whether a grade deserves trust: of the cases graded PRECISE (REFERENCE), how
often is the top hit really an expected document? It also suggests the lowest threshold at
which the top hits recorded here reach a target precision.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from lookup_knowledge.domain.models import RelevanceLevel


def hit_at_k(ranking: Sequence[str], relevant: Collection[str], k: int) -> float:
    """1.0 when a relevant document is among the first k, else 0.0."""
    return 1.0 if any(doc in relevant for doc in ranking[:k]) else 0.0


def recall_at_k(ranking: Sequence[str], relevant: Collection[str], k: int) -> float:
    """Share of the relevant documents found among the first k."""
    if not relevant:
        return 0.0
    return len(set(ranking[:k]) & set(relevant)) / len(set(relevant))


def reciprocal_rank(ranking: Sequence[str], relevant: Collection[str]) -> float:
    """1 / position of the first relevant document; 0.0 when none is ranked."""
    for position, doc in enumerate(ranking, start=1):
        if doc in relevant:
            return 1.0 / position
    return 0.0


def ndcg_at_k(ranking: Sequence[str], gains: Mapping[str, float], k: int) -> float:
    """DCG of the first k over the DCG of the ideal order (gain / log2(position + 1))."""
    ideal = _dcg(sorted((g for g in gains.values() if g > 0), reverse=True)[:k])
    if ideal == 0:
        return 0.0
    return _dcg([gains.get(doc, 0.0) for doc in ranking[:k]]) / ideal


def _dcg(gains: Iterable[float]) -> float:
    return sum(gain / math.log2(position + 1) for position, gain in enumerate(gains, start=1))


@dataclass(frozen=True, slots=True)
class RetrievalScores:
    hit_at_1: float
    hit_at_5: float
    recall_at_5: float
    mrr: float
    ndcg_at_5: float


def score_ranking(ranking: Sequence[str], expected: Collection[str]) -> RetrievalScores:
    relevant = set(expected)
    return RetrievalScores(
        hit_at_1=hit_at_k(ranking, relevant, 1),
        hit_at_5=hit_at_k(ranking, relevant, 5),
        recall_at_5=recall_at_k(ranking, relevant, 5),
        mrr=reciprocal_rank(ranking, relevant),
        ndcg_at_5=ndcg_at_k(ranking, dict.fromkeys(relevant, 1.0), 5),
    )


def mean_scores(scores: Sequence[RetrievalScores]) -> RetrievalScores | None:
    if not scores:
        return None
    n = len(scores)
    return RetrievalScores(
        hit_at_1=sum(s.hit_at_1 for s in scores) / n,
        hit_at_5=sum(s.hit_at_5 for s in scores) / n,
        recall_at_5=sum(s.recall_at_5 for s in scores) / n,
        mrr=sum(s.mrr for s in scores) / n,
        ndcg_at_5=sum(s.ndcg_at_5 for s in scores) / n,
    )


@dataclass(frozen=True, slots=True)
class TopHit:
    """The graded top hit of one case that returned evidence."""

    case_id: str
    score: float  # top_similarity: the quality score the grade was made from
    level: RelevanceLevel | None
    correct: bool  # its document is an expected document


@dataclass(frozen=True, slots=True)
class Precision:
    count: int
    correct: int

    @property
    def value(self) -> float | None:
        return self.correct / self.count if self.count else None


@dataclass(frozen=True, slots=True)
class ScoreBin:
    low: float
    high: float | None  # exclusive; None: exactly `low` (the capped 1.0)
    correct: int
    incorrect: int


@dataclass(frozen=True, slots=True)
class Suggestion:
    target: float
    threshold: float | None  # None: no threshold reaches the target on this data
    precision: Precision  # of the top hits at or above `threshold` (or the best one found)
    best_threshold: float | None  # where precision peaks, when the target is out of reach


@dataclass(frozen=True, slots=True)
class Calibration:
    by_level: dict[str, Precision]  # "PRECISE", "REFERENCE", "none"
    bins: tuple[ScoreBin, ...]
    precise: Suggestion
    reference: Suggestion


# Bin edges line up with the default thresholds; scores under 0.5 rarely reach the service.
BIN_EDGES = (0.0, 0.5, 0.6, 0.7, 0.75, 0.8, 0.9, 1.0)


def level_precision(top_hits: Iterable[TopHit], level: RelevanceLevel | None) -> Precision:
    graded = [t for t in top_hits if t.level is level]
    return Precision(count=len(graded), correct=sum(t.correct for t in graded))


def precision_at_or_above(top_hits: Sequence[TopHit], threshold: float) -> Precision:
    kept = [t for t in top_hits if t.score >= threshold]
    return Precision(count=len(kept), correct=sum(t.correct for t in kept))


def suggest_threshold(top_hits: Sequence[TopHit], target: float) -> Suggestion:
    """The lowest recorded top score whose cases at or above it reach `target` precision."""
    candidates = sorted({t.score for t in top_hits})
    best: tuple[float, float, Precision] | None = None
    for threshold in candidates:
        precision = precision_at_or_above(top_hits, threshold)
        value = precision.value or 0.0
        if value >= target:
            return Suggestion(target, threshold, precision, None)
        if best is None or value > best[0]:
            best = (value, threshold, precision)
    if best is None:
        return Suggestion(target, None, Precision(0, 0), None)
    return Suggestion(target, None, best[2], best[1])


def score_bins(
    top_hits: Sequence[TopHit], edges: Sequence[float] = BIN_EDGES
) -> tuple[ScoreBin, ...]:
    """The hits by score band (`edges` ascending from 0.0 or below, ending at 1.0; a last
    band holds exactly 1.0), the empty bands left out. Other edges would drop hits or count
    one twice: they raise `ValueError`."""
    if len(edges) < 2 or list(edges) != sorted(set(edges)) or edges[0] > 0.0 or edges[-1] != 1.0:
        raise ValueError(f"score bands need ascending edges from 0.0 to 1.0, got {list(edges)}")
    bins: list[ScoreBin] = []
    for low, high in itertools.pairwise(edges):
        inside = [t for t in top_hits if low <= t.score < high]
        bins.append(_bin(low, high, inside))
    bins.append(_bin(1.0, None, [t for t in top_hits if t.score >= 1.0]))
    return tuple(b for b in bins if b.correct or b.incorrect)


def _bin(low: float, high: float | None, inside: Sequence[TopHit]) -> ScoreBin:
    correct = sum(t.correct for t in inside)
    return ScoreBin(low, high, correct, len(inside) - correct)


def calibrate(
    top_hits: Sequence[TopHit], *, target_precision: float, reference_precision: float
) -> Calibration:
    return Calibration(
        by_level={
            "PRECISE": level_precision(top_hits, RelevanceLevel.PRECISE),
            "REFERENCE": level_precision(top_hits, RelevanceLevel.REFERENCE),
            "none": level_precision(top_hits, None),
        },
        bins=score_bins(top_hits),
        precise=suggest_threshold(top_hits, target_precision),
        reference=suggest_threshold(top_hits, reference_precision),
    )
