"""The absolute quality score: an IDF-weighted share of the query, with a phrase bonus."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lookup_knowledge.engine.scoring import (
    PHRASE_BONUS,
    SCOPE_TERMS,
    Level,
    idf,
    level_for,
    quality_score,
    scope_weight,
)


def test_a_chunk_covering_every_term_scores_one() -> None:
    assert quality_score({"redis": 2.0, "memory": 1.0}, {"redis", "memory"}) == 1.0


def test_a_chunk_covering_no_term_scores_zero() -> None:
    assert quality_score({"redis": 2.0}, set(), pairs_total=1, pairs_found=1) == 0.0


def test_coverage_is_weighted_by_idf() -> None:
    assert quality_score({"redis": 3.0, "high": 1.0}, {"redis"}) == 0.75
    assert quality_score({"redis": 3.0, "high": 1.0}, {"high"}) == 0.25


def test_phrase_evidence_adds_at_most_ten_percent_of_the_coverage() -> None:
    plain = quality_score({"a": 1.0, "b": 1.0, "c": 1.0}, {"a", "b"}, pairs_total=2)
    phrased = quality_score(
        {"a": 1.0, "b": 1.0, "c": 1.0}, {"a", "b"}, pairs_total=2, pairs_found=2
    )

    assert plain == pytest.approx(2 / 3, abs=1e-4)
    assert phrased == pytest.approx(2 / 3 * (1 + PHRASE_BONUS), abs=1e-4)


def test_an_empty_query_scores_zero() -> None:
    assert quality_score({}, set()) == 0.0


def test_a_question_of_up_to_the_scope_is_scored_as_a_share_of_the_whole_query() -> None:
    weights = {f"t{i}": 1.0 + i for i in range(SCOPE_TERMS)}

    assert scope_weight(weights) == sum(weights.values())
    assert quality_score(weights, set(weights)) == 1.0


def test_a_long_report_is_scored_against_the_weight_of_its_heaviest_terms() -> None:
    heavy = {f"unknown{i}": 4.0 for i in range(SCOPE_TERMS)}  # ids, hosts, words never seen
    light = {f"common{i}": 1.0 for i in range(20)}
    weights = heavy | light

    assert scope_weight(weights) == 4.0 * SCOPE_TERMS
    # covering only the 20 common words is worth less than half of a full question ...
    assert quality_score(weights, set(light)) == pytest.approx(20 / 64, abs=1e-4)
    # ... a chunk reaches 1 when what it covers weighs as much as the 16 heaviest terms
    covered = set(light) | {f"unknown{i}" for i in range(11)}
    assert quality_score(weights, covered) == 1.0
    assert quality_score(weights, covered - {"unknown0"}) < 1.0


@given(
    st.dictionaries(st.text(min_size=1, max_size=3), st.floats(0.01, 20), min_size=1, max_size=8),
    st.floats(0.01, 20),
)
def test_adding_a_term_never_lowers_what_a_chunk_must_cover(
    weights: dict[str, float], extra: float
) -> None:
    assert scope_weight({**weights, "\x00extra": extra}) >= scope_weight(weights)


@given(
    st.dictionaries(st.text(min_size=1, max_size=3), st.floats(0.01, 20), min_size=1, max_size=60),
    st.data(),
)
def test_score_is_always_between_zero_and_one(
    weights: dict[str, float], data: st.DataObject
) -> None:
    covered = data.draw(st.sets(st.sampled_from(sorted(weights))))
    pairs_total = data.draw(st.integers(0, 80))
    pairs_found = data.draw(st.integers(0, pairs_total))

    score = quality_score(weights, covered, pairs_total=pairs_total, pairs_found=pairs_found)

    assert 0.0 <= score <= 1.0


def test_a_term_no_chunk_contains_weighs_the_most() -> None:
    assert idf(0, 100) > idf(1, 100) > idf(50, 100) > idf(100, 100) > 0


def test_idf_is_bm25_idf() -> None:
    assert idf(3, 10) == pytest.approx(math.log(1 + 7.5 / 3.5))


@pytest.mark.parametrize(
    ("score", "level"),
    [
        (1.0, Level.PRECISE),
        (0.75, Level.PRECISE),
        (0.7499, Level.REFERENCE),
        (0.5, Level.REFERENCE),
        (0.4999, None),
        (0.0, None),
    ],
)
def test_levels_use_inclusive_thresholds(score: float, level: Level | None) -> None:
    assert level_for(score) == level
