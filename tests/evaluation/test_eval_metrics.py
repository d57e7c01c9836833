"""Document-level retrieval metrics and grade calibration, on hand-computed examples."""

from __future__ import annotations

import math

import pytest

from lookup_knowledge.domain.models import RelevanceLevel
from lookup_knowledge.evaluation.metrics import (
    Precision,
    TopHit,
    calibrate,
    hit_at_k,
    mean_scores,
    ndcg_at_k,
    recall_at_k,
    reciprocal_rank,
    score_bins,
    score_ranking,
    suggest_threshold,
)

RANKING = ("x.md", "a.md", "y.md", "b.md", "z.md", "c.md")


def test_hit_at_k_counts_a_relevant_document_within_the_first_k_only() -> None:
    assert hit_at_k(RANKING, {"a.md"}, 1) == 0.0
    assert hit_at_k(RANKING, {"a.md"}, 2) == 1.0
    assert hit_at_k(RANKING, {"c.md"}, 5) == 0.0


def test_recall_at_5_is_the_share_of_expected_documents_found_in_the_first_five() -> None:
    assert recall_at_k(RANKING, {"a.md", "c.md"}, 5) == 0.5
    assert recall_at_k(RANKING, {"a.md", "b.md"}, 5) == 1.0
    assert recall_at_k(RANKING, set(), 5) == 0.0


def test_mrr_is_one_over_the_position_of_the_first_relevant_document() -> None:
    assert reciprocal_rank(RANKING, {"y.md", "b.md"}) == pytest.approx(1 / 3)


def test_mrr_is_zero_when_no_relevant_document_is_ranked() -> None:
    assert reciprocal_rank(RANKING, {"missing.md"}) == 0.0
    assert reciprocal_rank((), {"a.md"}) == 0.0


def test_ndcg_with_binary_relevance_matches_the_hand_computation() -> None:
    # DCG = 1/log2(3) + 1/log2(5); ideal = 1/log2(2) + 1/log2(3)
    expected = (1 / math.log2(3) + 1 / math.log2(5)) / (1 + 1 / math.log2(3))
    assert ndcg_at_k(RANKING, {"a.md": 1.0, "b.md": 1.0}, 5) == pytest.approx(expected)
    assert expected == pytest.approx(0.6509, abs=1e-4)


def test_ndcg_with_graded_relevance_rewards_the_more_relevant_document_first() -> None:
    gains = {"a.md": 3.0, "b.md": 1.0}
    # less relevant first: DCG = 1 + 3/log2(3); ideal = 3 + 1/log2(3)
    swapped = ndcg_at_k(("b.md", "a.md"), gains, 5)
    assert swapped == pytest.approx((1 + 3 / math.log2(3)) / (3 + 1 / math.log2(3)))
    assert swapped == pytest.approx(0.7967, abs=1e-4)
    assert ndcg_at_k(("a.md", "b.md"), gains, 5) == pytest.approx(1.0)


def test_ndcg_ignores_documents_past_k_and_is_zero_without_relevant_documents() -> None:
    assert ndcg_at_k(RANKING, {"c.md": 1.0}, 5) == 0.0
    assert ndcg_at_k(RANKING, {}, 5) == 0.0


def test_a_multi_topic_case_that_finds_one_of_two_documents_first() -> None:
    scores = score_ranking(("a.md", "x.md"), ("a.md", "b.md"))

    assert (scores.hit_at_1, scores.hit_at_5, scores.recall_at_5, scores.mrr) == (1, 1, 0.5, 1)
    assert scores.ndcg_at_5 == pytest.approx(1 / (1 + 1 / math.log2(3)))


def test_means_are_taken_over_cases_and_undefined_without_cases() -> None:
    found = score_ranking(("a.md",), ("a.md",))
    missed = score_ranking((), ("a.md",))
    mean = mean_scores([found, missed])

    assert mean is not None
    assert (mean.hit_at_1, mean.mrr, mean.ndcg_at_5) == (0.5, 0.5, 0.5)
    assert mean_scores([]) is None


def top(score: float, correct: bool, level: RelevanceLevel | None = None) -> TopHit:
    return TopHit(case_id=f"c{score}{correct}", score=score, level=level, correct=correct)


TOP_HITS = [
    top(1.0, True, RelevanceLevel.PRECISE),
    top(1.0, True, RelevanceLevel.PRECISE),
    top(0.9, True, RelevanceLevel.PRECISE),
    top(0.8, False, RelevanceLevel.PRECISE),
    top(0.7, True, RelevanceLevel.REFERENCE),
    top(0.6, False, RelevanceLevel.REFERENCE),
    top(0.55, False, RelevanceLevel.REFERENCE),
]


def test_the_suggested_threshold_is_the_lowest_score_reaching_the_target_precision() -> None:
    # at or above 0.9: 3/3; 0.8: 3/4; 0.7: 4/5; 0.6: 4/6; 0.55: 4/7
    suggestion = suggest_threshold(TOP_HITS, 0.8)

    assert suggestion.threshold == 0.7
    assert suggestion.precision == Precision(count=5, correct=4)
    assert suggest_threshold(TOP_HITS, 0.9).threshold == 0.9


def test_an_unreachable_target_reports_the_best_precision_instead() -> None:
    hits = [top(1.0, False), top(0.9, True)]
    suggestion = suggest_threshold(hits, 0.9)

    assert suggestion.threshold is None
    assert suggestion.best_threshold == 0.9
    assert suggestion.precision.value == 0.5


def test_calibration_counts_how_often_each_grade_has_an_expected_top_hit() -> None:
    calibration = calibrate(TOP_HITS, target_precision=0.9, reference_precision=0.5)

    assert calibration.by_level["PRECISE"] == Precision(count=4, correct=3)
    assert calibration.by_level["REFERENCE"] == Precision(count=3, correct=1)
    assert calibration.by_level["none"].value is None
    assert (calibration.precise.threshold, calibration.reference.threshold) == (0.9, 0.55)


@pytest.mark.parametrize(
    "edges", [(), (0.5,), (0.5, 0.2, 1.0), (0.0, 0.2, 0.2, 1.0), (0.0, 0.9), (0.5, 0.9, 1.0)]
)
def test_score_bins_refuse_edges_that_would_lose_or_double_count_hits(
    edges: tuple[float, ...],
) -> None:
    with pytest.raises(ValueError, match=r"ascending edges from 0\.0 to 1\.0"):
        score_bins(TOP_HITS, edges)


def test_score_bins_split_right_and_wrong_top_hits_and_keep_the_cap_apart() -> None:
    bins = {(b.low, b.high): (b.correct, b.incorrect) for b in score_bins(TOP_HITS)}

    assert bins == {
        (0.5, 0.6): (0, 1),
        (0.6, 0.7): (0, 1),
        (0.7, 0.75): (1, 0),
        (0.8, 0.9): (0, 1),
        (0.9, 1.0): (1, 0),
        (1.0, None): (2, 0),
    }
