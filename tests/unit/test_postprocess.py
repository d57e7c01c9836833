"""docs/pipeline.md#postprocess: order, dedup, caps and grading."""

from __future__ import annotations

import math

import pytest

from builders import WORKED_EXAMPLE, hit
from lookup_knowledge.domain.models import RelevanceLevel
from lookup_knowledge.pipeline.limits import PipelineLimits
from lookup_knowledge.pipeline.postprocess import COMPLETENESS_HINTS, clamp_score, postprocess

LIMITS = PipelineLimits()


def keys(result):  # type: ignore[no-untyped-def]
    return [b.evidence_key for b in result.blocks]


def test_worked_example_of_the_spec() -> None:
    hits = [hit(k, s, rank) for rank, (k, s) in enumerate(WORKED_EXAMPLE, start=1)]
    result = postprocess(hits, limits=LIMITS)
    assert keys(result) == [
        "gw#chunk-1",
        "gw#chunk-3",
        "nginx#chunk-2",
        "k8s#chunk-0",
        "lb#chunk-4",
    ]
    assert result.candidate_count == 8
    assert result.evidence_block_count == 5
    assert result.top_similarity == pytest.approx(0.91)
    assert result.relevance_level is RelevanceLevel.PRECISE
    assert [t.final_rank for t in result.rerank_trace] == [1, 2, 3, 4, 5]


def test_rank_two_stays_second_even_with_a_higher_score() -> None:
    hits = [hit("a#chunk-0", 0.6, 1), hit("b#chunk-0", 0.99, 2)]
    assert keys(postprocess(hits, limits=LIMITS)) == ["a#chunk-0", "b#chunk-0"]


def test_hits_arriving_out_of_order_are_sorted_by_original_rank_only() -> None:
    hits = [hit("c#chunk-0", 0.99, 3), hit("a#chunk-0", 0.1, 1), hit("b#chunk-0", 0.5, 2)]
    assert keys(postprocess(hits, limits=LIMITS)) == ["a#chunk-0", "b#chunk-0", "c#chunk-0"]


def test_a_repeated_evidence_key_is_merged_into_the_first_with_reasons_united() -> None:
    hits = [
        hit("a#chunk-0", 0.9, 1),
        hit("b#chunk-0", 0.8, 2),
        hit("a#chunk-0", 0.7, 3, hit_reasons=("semantic_rank:3", "keyword")),
    ]
    result = postprocess(hits, limits=LIMITS)
    assert keys(result) == ["a#chunk-0", "b#chunk-0"]
    assert result.blocks[0].hit_reasons == ("semantic_rank:1", "semantic_rank:3", "keyword")
    assert result.blocks[0].quality_score == pytest.approx(0.9)


@pytest.mark.parametrize("missing", [None, "", "   "])
def test_a_merge_fills_a_missing_breadcrumb(missing: str | None) -> None:
    hits = [hit("a#chunk-0", 0.9, 1, breadcrumb=missing), hit("a#chunk-0", 0.9, 2)]
    assert postprocess(hits, limits=LIMITS).blocks[0].breadcrumb == "A > Steps"


def test_a_merge_keeps_an_existing_breadcrumb() -> None:
    hits = [hit("a#chunk-0", 0.9, 1, breadcrumb="First"), hit("a#chunk-0", 0.9, 2)]
    assert postprocess(hits, limits=LIMITS).blocks[0].breadcrumb == "First"


def test_a_third_chunk_of_one_document_is_skipped() -> None:
    hits = [
        hit("a#chunk-0", 0.9, 1),
        hit("a#chunk-1", 0.9, 2),
        hit("a#chunk-2", 0.9, 3),
        hit("b#chunk-0", 0.9, 4),
    ]
    assert keys(postprocess(hits, limits=LIMITS)) == ["a#chunk-0", "a#chunk-1", "b#chunk-0"]


def test_the_per_document_cap_is_configurable() -> None:
    hits = [hit("a#chunk-0", 0.9, 1), hit("a#chunk-1", 0.9, 2)]
    limits = PipelineLimits(max_chunks_per_document=1)
    assert keys(postprocess(hits, limits=limits)) == ["a#chunk-0"]


def test_at_most_return_n_blocks_in_total() -> None:
    hits = [hit(f"d{i}#chunk-0", 0.9, i) for i in range(1, 9)]
    result = postprocess(hits, limits=LIMITS)
    assert keys(result) == [f"d{i}#chunk-0" for i in range(1, 6)]
    assert result.candidate_count == 8
    assert result.evidence_block_count == 5


def test_a_duplicate_after_the_total_cap_still_merges_into_its_block() -> None:
    hits = [hit(f"d{i}#chunk-0", 0.9, i) for i in range(1, 6)] + [hit("d1#chunk-0", 0.9, 6)]
    result = postprocess(hits, limits=LIMITS)
    assert result.blocks[0].hit_reasons == ("semantic_rank:1", "semantic_rank:6")


@pytest.mark.parametrize(
    ("top", "level"),
    [
        (1.0, RelevanceLevel.PRECISE),
        (0.75, RelevanceLevel.PRECISE),
        (0.7499, RelevanceLevel.REFERENCE),
        (0.5, RelevanceLevel.REFERENCE),
        (0.4999, None),
        (0.0, None),
    ],
)
def test_thresholds_are_inclusive(top: float, level: RelevanceLevel | None) -> None:
    result = postprocess([hit("a#chunk-0", top, 1)], limits=LIMITS)
    assert result.relevance_level is level
    assert result.is_low_quality is (level is None)


def test_thresholds_are_configurable() -> None:
    limits = PipelineLimits(precise_threshold=0.9, reference_threshold=0.3)
    assert postprocess([hit("a#chunk-0", 0.8, 1)], limits=limits).relevance_level is (
        RelevanceLevel.REFERENCE
    )
    assert postprocess([hit("a#chunk-0", 0.3, 1)], limits=limits).relevance_level is (
        RelevanceLevel.REFERENCE
    )


def test_grade_comes_from_the_rank_first_hit_not_the_best_score() -> None:
    hits = [hit("a#chunk-0", 0.55, 1), hit("b#chunk-0", 0.99, 2)]
    result = postprocess(hits, limits=LIMITS)
    assert result.top_similarity == pytest.approx(0.55)
    assert result.relevance_level is RelevanceLevel.REFERENCE


def test_grade_comes_from_the_rank_first_hit_even_when_it_is_capped_away() -> None:
    limits = PipelineLimits(max_chunks_per_document=1)
    hits = [hit("a#chunk-0", 0.6, 2), hit("a#chunk-1", 0.95, 1)]
    result = postprocess(hits, limits=limits)
    assert keys(result) == ["a#chunk-1"]
    assert result.top_similarity == pytest.approx(0.95)


@pytest.mark.parametrize(
    ("raw", "clamped"), [(1.7, 1.0), (-0.3, 0.0), (math.inf, 0.0), (math.nan, 0.0), (0.42, 0.42)]
)
def test_scores_are_clamped_to_the_unit_interval(raw: float, clamped: float) -> None:
    assert clamp_score(raw) == pytest.approx(clamped)
    result = postprocess([hit("a#chunk-0", raw, 1)], limits=LIMITS)
    assert result.blocks[0].quality_score == pytest.approx(clamped)
    assert result.top_similarity == pytest.approx(clamped)


def test_no_hits_means_no_level_and_low_quality() -> None:
    result = postprocess([], limits=LIMITS)
    assert result.blocks == ()
    assert result.relevance_level is None
    assert result.top_similarity is None
    assert result.is_low_quality is True
    assert result.completeness_hint is None


def test_completeness_hint_is_the_fixed_sentence_of_the_level() -> None:
    result = postprocess([hit("a#chunk-0", 0.9, 1)], limits=LIMITS)
    assert result.completeness_hint == COMPLETENESS_HINTS[RelevanceLevel.PRECISE]
    assert "more precise" in (result.completeness_hint or "")


def test_rerank_trace_has_one_item_per_surviving_block_with_equal_scores() -> None:
    hits = [hit("a#chunk-0", 0.9, 1), hit("a#chunk-0", 0.9, 2), hit("b#chunk-0", 0.6, 3)]
    trace = postprocess(hits, limits=LIMITS).rerank_trace
    assert [(t.final_rank, t.source) for t in trace] == [(1, "runbooks/a.md"), (2, "runbooks/b.md")]
    assert all(t.base_score == t.final_score for t in trace)
    assert trace[1].final_score == pytest.approx(0.6)
