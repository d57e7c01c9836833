"""What `lookup-knowledge eval` prints: the tuning set against its baseline, then every set."""

from __future__ import annotations

from collections.abc import Sequence

from lookup_knowledge.evaluation.baseline import Comparison
from lookup_knowledge.evaluation.devset import MissingCorpus
from lookup_knowledge.evaluation.sets import EvalSet
from lookup_knowledge.evaluation.sets_report import console_summary
from lookup_knowledge.evaluation.suite import METRIC_LABELS, SuiteResult


def print_tuning_summary(suite: SuiteResult, comparison: Comparison, source_label: str) -> None:
    positives = sum(1 for r in suite.golden if not r.case.is_negative)
    print(
        f"tuning set: {len(suite.golden)} golden cases ({positives} with expected documents, "
        f"{len(suite.golden) - positives} negative) and {len(suite.pipeline)} pipeline cases; "
        f"answers from {source_label}"
    )
    print(
        "  "
        + "  ".join(
            f"{METRIC_LABELS[m.name]} {m.current:.3f}" + (f" ({m.delta:+.3f})" if m.delta else "")
            for m in comparison.metrics
            if m.current is not None
        )
    )
    for level, precision in suite.calibration.by_level.items():
        if precision.count:
            print(f"  graded {level}: top hit expected in {precision.correct}/{precision.count}")
    known = {d.case_id for d in comparison.known_failures}
    print(f"  behaviour: {len(suite.failed)} failing cases ({len(known)} known in the baseline)")
    for delta in comparison.new_failures:
        print(f"  NEW FAILURE {delta.case_id}: {', '.join(delta.checks)}")
    for metric in comparison.regressed_metrics:
        print(
            f"  REGRESSED {METRIC_LABELS[metric.name]}: {metric.baseline:.3f} → "
            f"{metric.current:.3f} (tolerance {comparison.tolerance:g})"
        )
    for metric in comparison.improved_metrics:
        name = METRIC_LABELS[metric.name]
        print(f"  improved {name}: {metric.baseline:.3f} → {metric.current:.3f}")
    for delta in comparison.fixed:
        print(f"  fixed {delta.case_id}: {', '.join(delta.checks)}")
    if not comparison.has_baseline:
        print("  no baseline yet: `lookup-knowledge eval --update-baseline` records one")
    print("PASS" if comparison.passed else "FAIL")


def print_sets(sets: Sequence[EvalSet], missing: Sequence[MissingCorpus]) -> None:
    for line in console_summary(sets, missing):
        print(line)
