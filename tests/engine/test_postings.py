"""The postings' membership test against a plain set, on random bags."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lookup_knowledge.engine import postings as postings_module
from lookup_knowledge.engine.bags import bags
from lookup_knowledge.engine.postings import Postings

WORDS = ["disk", "full", "node", "pod", "redis", "memory", "timeout"]


@settings(max_examples=60, deadline=None)
@given(
    texts=st.lists(
        st.lists(st.sampled_from(WORDS), max_size=6).map(" ".join), min_size=1, max_size=30
    ),
    probe=st.lists(st.integers(min_value=0, max_value=29), max_size=20),
)
def test_holds_answers_which_units_hold_a_term(texts: list[str], probe: list[int]) -> None:
    paths = (  # read from the table, from a dense row, marked, searched
        (postings_module.DENSE_CELLS, 0, postings_module.MARK_UNITS),
        (0, postings_module.DENSE_ROW_BYTES, postings_module.MARK_UNITS),
        (0, 0, postings_module.MARK_UNITS),
        (0, 0, 0),
    )
    for dense_cells, row_bytes, mark_units in paths:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(postings_module, "DENSE_CELLS", dense_cells)
            patch.setattr(postings_module, "DENSE_ROW_BYTES", row_bytes)
            patch.setattr(postings_module, "DENSE_ROW_SHARE", 30)  # every term, here
            patch.setattr(postings_module, "MARK_UNITS", mark_units)
            _check_holds(texts, probe)


def _check_holds(texts: list[str], probe: list[int]) -> None:
    counted = bags(texts, frozenset())
    postings = Postings(counted)
    units = np.array([p for p in probe if p < len(texts)], dtype=np.int32)
    pairs = set(zip(counted.unit.tolist(), counted.term.tolist(), strict=True))
    for term_id in range(len(counted.words)):
        expected = [(u, term_id) in pairs for u in units.tolist()]

        assert postings.holds(term_id, units).tolist() == expected


def test_a_term_in_no_unit_is_held_by_none() -> None:
    counted = bags(["disk full", "node"], frozenset())
    postings = Postings(counted)
    node = counted.words.index("node")

    assert postings.holds(node, np.array([0, 1], dtype=np.int32)).tolist() == [False, True]
    assert postings.holds(node, np.array([], dtype=np.int32)).tolist() == []


def test_mark_adds_a_value_to_every_unit_holding_the_term_whatever_its_count() -> None:
    counted = bags(["disk disk disk full", "node", "disk"], frozenset())
    postings = Postings(counted)
    scores = np.zeros(3)

    postings.mark(scores, counted.words.index("disk"), 2.5)

    assert scores.tolist() == [2.5, 0.0, 2.5]


def test_unit_sums_add_each_distinct_term_of_a_unit_once() -> None:
    counted = bags(["disk disk full", "node", ""], frozenset())
    postings = Postings(counted)
    weight = {"disk": 1.0, "full": 10.0, "node": 100.0}

    sums = postings.unit_sums(np.array([weight[w] for w in counted.words]))

    assert sums.tolist() == [11.0, 100.0, 0.0]


def test_only_a_small_corpus_keeps_the_table_of_who_holds_what(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    counted = bags(["disk full", "node", "pod memory"], frozenset())
    small = Postings(counted)
    monkeypatch.setattr(postings_module, "DENSE_CELLS", len(counted.words) * 3 - 1)
    monkeypatch.setattr(postings_module, "DENSE_ROW_BYTES", 0)
    large = Postings(counted)

    assert small.nbytes - large.nbytes == len(counted.words) * 3 * 5  # 5 bytes a cell


def test_a_large_corpus_keeps_dense_rows_for_its_most_frequent_terms_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    texts = ["pod"] * 8 + ["pod node"] * 4 + ["disk"] * 2 + ["redis"] * 2  # 16 units
    counted = bags(texts, frozenset())
    monkeypatch.setattr(postings_module, "DENSE_CELLS", 0)
    monkeypatch.setattr(postings_module, "DENSE_ROW_BYTES", 0)
    sparse = Postings(counted)
    monkeypatch.setattr(postings_module, "DENSE_ROW_BYTES", 2 * 16 * 4)  # room for two rows
    rows = Postings(counted)

    # pod (12 units) and node (4) are held by an eighth of the units or more, disk and redis
    # (2 each) too, but the budget takes the two most frequent: 4 bytes a unit each.
    assert rows.nbytes - sparse.nbytes == 2 * 16 * 4
    monkeypatch.setattr(postings_module, "DENSE_ROW_SHARE", 4)  # now a quarter: pod, node
    monkeypatch.setattr(postings_module, "DENSE_ROW_BYTES", 10 * 16 * 4)
    assert Postings(counted).nbytes - sparse.nbytes == 2 * 16 * 4


@settings(max_examples=60, deadline=None)
@given(
    texts=st.lists(
        st.lists(st.sampled_from(WORDS), max_size=6).map(" ".join), min_size=1, max_size=30
    ),
    factor=st.floats(min_value=0.0, max_value=8.0),
)
def test_tables_rows_and_postings_score_exactly_alike(texts: list[str], factor: float) -> None:
    counted = bags(texts, frozenset())
    dense = Postings(counted)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(postings_module, "DENSE_CELLS", 0)
        patch.setattr(postings_module, "DENSE_ROW_SHARE", 30)  # a row for every term
        rows = Postings(counted)
        patch.setattr(postings_module, "DENSE_ROW_BYTES", 0)
        sparse = Postings(counted)
    start = np.linspace(0.0, 3.0, len(texts))  # scores are never negative
    for term_id in range(len(counted.words)):
        for method in ("add_scores", "max_scores", "mark"):
            a, b, c = start.copy(), start.copy(), start.copy()
            getattr(dense, method)(a, term_id, factor)
            getattr(sparse, method)(b, term_id, factor)
            getattr(rows, method)(c, term_id, factor)

            assert a.tobytes() == b.tobytes() == c.tobytes(), method
