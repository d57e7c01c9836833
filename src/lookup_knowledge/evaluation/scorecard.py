"""What an agent experienced over a set of cases, in the figures the retrieval targets use.

An `Outcome` is one case's answer reduced to what matters for judging it: the evidence
documents best first, the grade, whether anything came back. A `Scorecard` aggregates
outcomes, at document level:

* over the positive cases (some document answers them): Hit@1, Hit@5, MRR, and the share
  answered `NO_EVIDENCE` although the knowledge base holds the answer (false no-evidence);
* over every case graded PRECISE (REFERENCE): the share whose top document answers the case
  (grade precision); a negative case that gets a grade counts as wrong;
* over the negative cases (nothing answers them): the share answered `NO_EVIDENCE`, off-topic,
  near-miss and vague apart, and how many were graded PRECISE.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from lookup_knowledge.domain.models import RelevanceLevel
from lookup_knowledge.evaluation.metrics import Precision, hit_at_k, reciprocal_rank

OFF_TOPIC = "negative-off-topic"
NEAR_MISS = "negative-near-miss"
VAGUE = "negative-vague"  # a complaint or a request for help that names nothing a page is about


@dataclass(frozen=True, slots=True)
class Outcome:
    case_id: str
    kind: str  # a development-set kind, or "negative"/"positive" for the tuning set
    relevant: frozenset[str]  # empty: a negative case
    documents: tuple[str, ...]  # the agent's evidence documents, best first, distinct
    level: RelevanceLevel | None
    top_score: float | None

    @property
    def is_negative(self) -> bool:
        return not self.relevant

    @property
    def answered(self) -> bool:
        """The agent got evidence (EVIDENCE_FOUND)."""
        return bool(self.documents)

    @property
    def top_correct(self) -> bool:
        return bool(self.documents) and self.documents[0] in self.relevant


@dataclass(frozen=True, slots=True)
class Share:
    """`part` of `whole` cases; `value` is None when there is no case."""

    part: int
    whole: int

    @property
    def value(self) -> float | None:
        return self.part / self.whole if self.whole else None


@dataclass(frozen=True, slots=True)
class Scorecard:
    cases: int
    positives: int
    hit_at_1: float | None
    hit_at_5: float | None
    mrr: float | None
    false_no_evidence: Share  # positives answered NO_EVIDENCE
    precise: Precision  # cases graded PRECISE whose top document is relevant
    reference: Precision
    ungraded_answers: int  # evidence returned under the reference threshold (no level)
    negatives_silent: Share  # negatives answered NO_EVIDENCE
    off_topic_silent: Share
    near_miss_silent: Share
    vague_silent: Share
    negatives_precise: int  # negatives graded PRECISE


def score(outcomes: Sequence[Outcome]) -> Scorecard:
    positives = [o for o in outcomes if not o.is_negative]
    negatives = [o for o in outcomes if o.is_negative]
    n = len(positives)

    def mean(values: Iterable[float]) -> float | None:
        return sum(values) / n if n else None

    return Scorecard(
        cases=len(outcomes),
        positives=n,
        hit_at_1=mean(hit_at_k(o.documents, o.relevant, 1) for o in positives),
        hit_at_5=mean(hit_at_k(o.documents, o.relevant, 5) for o in positives),
        mrr=mean(reciprocal_rank(o.documents, o.relevant) for o in positives),
        false_no_evidence=Share(sum(not o.answered for o in positives), n),
        precise=_precision(outcomes, RelevanceLevel.PRECISE),
        reference=_precision(outcomes, RelevanceLevel.REFERENCE),
        ungraded_answers=sum(o.answered and o.level is None for o in outcomes),
        negatives_silent=_silent(negatives),
        off_topic_silent=_silent(o for o in negatives if o.kind == OFF_TOPIC),
        near_miss_silent=_silent(o for o in negatives if o.kind == NEAR_MISS),
        vague_silent=_silent(o for o in negatives if o.kind == VAGUE),
        negatives_precise=sum(o.level is RelevanceLevel.PRECISE for o in negatives),
    )


def by_kind(outcomes: Sequence[Outcome], kinds: Collection[str]) -> dict[str, Scorecard]:
    """A scorecard per kind, in the order of `kinds`, for the kinds that have cases."""
    return {
        kind: score([o for o in outcomes if o.kind == kind])
        for kind in kinds
        if any(o.kind == kind for o in outcomes)
    }


def _precision(outcomes: Iterable[Outcome], level: RelevanceLevel) -> Precision:
    graded = [o for o in outcomes if o.answered and o.level is level]
    return Precision(count=len(graded), correct=sum(o.top_correct for o in graded))


def _silent(negatives: Iterable[Outcome]) -> Share:
    cases = list(negatives)
    return Share(sum(not o.answered for o in cases), len(cases))
