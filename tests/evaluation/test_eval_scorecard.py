"""The figures the retrieval targets are stated in, computed from outcomes."""

from __future__ import annotations

from lookup_knowledge.domain.models import RelevanceLevel
from lookup_knowledge.evaluation.scorecard import Outcome, by_kind, score

PRECISE, REFERENCE = RelevanceLevel.PRECISE, RelevanceLevel.REFERENCE


def outcome(
    kind: str,
    relevant: tuple[str, ...],
    documents: tuple[str, ...],
    level: RelevanceLevel | None = None,
    case_id: str = "c",
) -> Outcome:
    score_ = {PRECISE: 0.9, REFERENCE: 0.6, None: None}[level] if documents else None
    return Outcome(case_id, kind, frozenset(relevant), documents, level, score_)


def test_a_positive_answered_with_nothing_counts_as_false_no_evidence_and_a_miss() -> None:
    card = score(
        [
            outcome("paraphrase", ("a.md",), ("a.md",), PRECISE),
            outcome("paraphrase", ("a.md",), ()),
        ]
    )

    assert (card.false_no_evidence.part, card.false_no_evidence.whole) == (1, 2)
    assert card.hit_at_1 == 0.5
    assert card.mrr == 0.5


def test_hit_at_5_and_mrr_use_the_first_relevant_document_position() -> None:
    card = score([outcome("short", ("c.md",), ("a.md", "b.md", "c.md"), REFERENCE)])

    assert card.hit_at_1 == 0.0
    assert card.hit_at_5 == 1.0
    assert card.mrr == 1 / 3


def test_a_negative_graded_precise_counts_against_precise_precision() -> None:
    card = score(
        [
            outcome("typo", ("a.md",), ("a.md",), PRECISE),
            outcome("negative-near-miss", (), ("a.md",), PRECISE),
        ]
    )

    assert (card.precise.correct, card.precise.count) == (1, 2)
    assert card.negatives_precise == 1
    assert (card.near_miss_silent.part, card.near_miss_silent.whole) == (0, 1)


def test_off_topic_near_miss_and_vague_negatives_are_counted_apart() -> None:
    card = score(
        [
            outcome("negative-off-topic", (), ()),
            outcome("negative-off-topic", (), ("x.md",), REFERENCE),
            outcome("negative-near-miss", (), ()),
            outcome("negative-vague", (), ("y.md",), PRECISE),
        ]
    )

    assert (card.off_topic_silent.part, card.off_topic_silent.whole) == (1, 2)
    assert (card.near_miss_silent.part, card.near_miss_silent.whole) == (1, 1)
    assert (card.vague_silent.part, card.vague_silent.whole) == (0, 1)
    assert (card.negatives_silent.part, card.negatives_silent.whole) == (2, 4)
    assert card.negatives_precise == 1
    assert (card.reference.correct, card.reference.count) == (0, 1)
    assert card.hit_at_1 is None


def test_evidence_under_the_reference_threshold_is_an_ungraded_answer() -> None:
    card = score([outcome("short", ("a.md",), ("a.md",), None)])

    assert card.ungraded_answers == 1
    assert card.precise.count == card.reference.count == 0


def test_the_kind_breakdown_keeps_the_given_order_and_skips_empty_kinds() -> None:
    outcomes = [
        outcome("typo", ("a.md",), ("a.md",), PRECISE),
        outcome("short", ("a.md",), ()),
    ]

    cards = by_kind(outcomes, ("short", "paraphrase", "typo"))

    assert list(cards) == ["short", "typo"]
    assert cards["typo"].hit_at_1 == 1.0 and cards["short"].hit_at_1 == 0.0
