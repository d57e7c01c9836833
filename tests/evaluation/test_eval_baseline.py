"""The diff against the baseline: a ratchet on metrics and on failing assertions."""

from __future__ import annotations

from pathlib import Path

import pytest

from lookup_knowledge.evaluation.baseline import (
    Baseline,
    BaselineError,
    CaseRecord,
    compare,
    load_baseline,
    save_baseline,
)

METRICS = {
    "hit_at_1": 0.9,
    "hit_at_5": 0.95,
    "recall_at_5": 0.93,
    "mrr": 0.92,
    "ndcg_at_5": 0.91,
    "precise_precision": 0.95,
    "reference_precision": 0.8,
    "no_evidence_accuracy": 1.0,
}
PASSING = CaseRecord(passed=True, documents=("a.md",))


def snap(
    metrics: dict[str, float | None] | None = None, *, cases: dict[str, CaseRecord] | None = None
) -> Baseline:
    return Baseline(
        source="fixtures",
        config={"return_n": 5},
        metrics={**METRICS, **(metrics or {})},
        cases=cases or {"case-a": PASSING},
        pipeline_cases={},
    )


def failing(*checks: str) -> CaseRecord:
    return CaseRecord(passed=False, failures=checks)


def test_a_metric_drop_beyond_the_tolerance_fails() -> None:
    comparison = compare(snap({"hit_at_1": 0.85}), snap(), tolerance=0.02)

    assert not comparison.passed
    assert [m.name for m in comparison.regressed_metrics] == ["hit_at_1"]


def test_a_drop_within_the_tolerance_passes_and_is_reported_as_a_drop() -> None:
    comparison = compare(snap({"mrr": 0.905}), snap(), tolerance=0.02)

    assert comparison.passed
    assert {m.name: m.status for m in comparison.metrics}["mrr"] == "dropped"


def test_an_improvement_passes_and_is_reported() -> None:
    comparison = compare(snap({"hit_at_1": 0.97, "ndcg_at_5": 0.95}), snap(), tolerance=0.02)

    assert comparison.passed
    assert [m.name for m in comparison.improved_metrics] == ["hit_at_1", "ndcg_at_5"]


def test_an_ungated_metric_may_drop_without_failing() -> None:
    comparison = compare(snap({"reference_precision": 0.5}), snap(), tolerance=0.02)

    assert comparison.passed
    assert {m.name: m.status for m in comparison.metrics}["reference_precision"] == "dropped"


def test_a_drop_of_precise_precision_fails_because_the_grade_lost_trust() -> None:
    comparison = compare(snap({"precise_precision": 0.9}), snap(), tolerance=0.02)

    assert not comparison.passed


def test_a_case_that_starts_failing_is_a_regression() -> None:
    current = snap(cases={"case-a": failing("expect.evidence_status")})
    comparison = compare(current, snap(), tolerance=0.02)

    assert not comparison.passed
    assert [(d.case_id, d.checks) for d in comparison.new_failures] == [
        ("case-a", ("expect.evidence_status",))
    ]


def test_a_failure_held_in_the_baseline_is_known_and_does_not_fail_the_run() -> None:
    known = failing("expect.evidence_status")
    comparison = compare(
        snap(cases={"case-a": known}), snap(cases={"case-a": known}), tolerance=0.02
    )

    assert comparison.passed
    assert [d.case_id for d in comparison.known_failures] == ["case-a"]


def test_a_known_failing_case_that_fails_one_more_assertion_regresses() -> None:
    before = snap(cases={"case-a": failing("expect.min_relevance_level")})
    now = snap(cases={"case-a": failing("expect.min_relevance_level", "rule.selection")})
    comparison = compare(now, before, tolerance=0.02)

    assert not comparison.passed
    assert comparison.new_failures[0].checks == ("rule.selection",)


def test_a_known_failure_that_passes_now_is_reported_as_fixed() -> None:
    before = snap(cases={"case-a": failing("expect.evidence_status")})
    comparison = compare(snap(), before, tolerance=0.02)

    assert comparison.passed
    assert [(d.case_id, d.checks) for d in comparison.fixed] == [
        ("case-a", ("expect.evidence_status",))
    ]


def test_a_new_case_that_fails_is_a_regression_until_the_baseline_accepts_it() -> None:
    now = snap(cases={"case-a": PASSING, "case-b": failing("expect.evidence_status")})
    comparison = compare(now, snap(), tolerance=0.02)

    assert not comparison.passed
    assert comparison.added_cases == ("case-b",)


def test_without_a_baseline_every_failure_is_new_and_metrics_are_untracked() -> None:
    comparison = compare(snap(cases={"case-a": failing("rule.grade")}), None, tolerance=0.02)

    assert not comparison.passed
    assert {m.status for m in comparison.metrics} == {"untracked"}
    assert compare(snap(), None, tolerance=0.02).passed


def test_changed_evidence_documents_are_listed() -> None:
    now = snap(cases={"case-a": CaseRecord(passed=True, documents=("b.md", "a.md"))})
    comparison = compare(now, snap(), tolerance=0.02)

    assert [(c.before, c.after) for c in comparison.ranking_changes] == [
        (("a.md",), ("b.md", "a.md"))
    ]


def test_the_baseline_survives_a_round_trip_and_a_broken_file_is_an_error(
    tmp_path: Path,
) -> None:
    path = tmp_path / "reports" / "baseline.json"
    save_baseline(path, snap())

    assert load_baseline(path) == snap()
    assert load_baseline(tmp_path / "absent.json") is None
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(BaselineError):
        load_baseline(path)
