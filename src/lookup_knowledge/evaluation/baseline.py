"""The baseline and the diff of a run against it.

The baseline is a snapshot of a run: the metrics, and per case whether it passed, which
assertions failed and which documents it found. Diffing is a ratchet:

* a gated metric that drops by more than the tolerance is a regression;
* an assertion failing now that did not fail in the baseline (or a new case that fails) is a
  regression; a failure the baseline already holds is reported as known, not fatal;
* rises and fixed assertions are reported as improvements.

`--update-baseline` writes the current snapshot, deliberately: that is how a known failure is
accepted and how an improvement becomes the new floor. Nothing here reads a clock, so the
files only change when the figures do.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from lookup_knowledge.evaluation.suite import (
    GRADE_METRICS,
    RETRIEVAL_METRICS,
    CaseResult,
    PipelineResult,
    SuiteResult,
)

DEFAULT_TOLERANCE = 0.02
# Metrics whose drop fails the run. REFERENCE precision rests on a handful of cases and moves
# when a case rightly climbs to PRECISE; NO_EVIDENCE accuracy is gated case by case already.
GATED_METRICS = (*RETRIEVAL_METRICS, "precise_precision")


class BaselineError(ValueError):
    """The baseline file exists but cannot be read."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class CaseRecord(_Frozen):
    passed: bool
    failures: tuple[str, ...] = ()  # names of the failing assertions
    documents: tuple[str, ...] = ()  # the evidence documents, best first
    relevance_level: str | None = None
    top_score: float | None = None


class Baseline(_Frozen):
    version: Literal[1] = 1
    source: str
    config: dict[str, float | int | str]
    metrics: dict[str, float | None]
    cases: dict[str, CaseRecord]
    pipeline_cases: dict[str, CaseRecord]


def snapshot(suite: SuiteResult) -> Baseline:
    config = suite.config
    return Baseline(
        source=suite.source,
        config={
            **asdict(config.pipeline),
            **{f"projection_{k}": v for k, v in asdict(config.projection).items()},
            "top_k": config.top_k,
            "mode": config.mode,
        },
        metrics=dict(suite.metrics),
        cases={r.case.id: _record(r) for r in suite.golden},
        pipeline_cases={r.case.id: _record(r) for r in suite.pipeline},
    )


def _record(result: CaseResult | PipelineResult) -> CaseRecord:
    run = result.run
    return CaseRecord(
        passed=result.passed,
        failures=tuple(dict.fromkeys(f.check for f in result.failures)),
        documents=run.documents if run is not None else (),
        relevance_level=(
            run.result.relevance_level.value
            if run is not None and run.result.relevance_level is not None
            else None
        ),
        top_score=run.lookup.top_similarity if run is not None else None,
    )


def load_baseline(path: Path) -> Baseline | None:
    if not path.exists():
        return None
    try:
        return Baseline.model_validate_json(path.read_bytes())
    except (OSError, ValidationError) as exc:
        raise BaselineError(f"cannot read the baseline {path}: {exc}") from exc


def save_baseline(path: Path, baseline: Baseline) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(baseline.model_dump(mode="json"), ensure_ascii=False, indent=2)
    path.write_text(text + "\n", encoding="utf-8")


@dataclass(frozen=True, slots=True)
class MetricDelta:
    name: str
    baseline: float | None
    current: float | None
    gated: bool
    tolerance: float

    @property
    def delta(self) -> float | None:
        if self.baseline is None or self.current is None:
            return None
        return round(self.current - self.baseline, 4)

    @property
    def status(self) -> Literal["regressed", "dropped", "improved", "same", "untracked"]:
        delta = self.delta
        if delta is None:
            return "untracked"
        if delta < -self.tolerance and self.gated:
            return "regressed"
        if delta < 0:
            return "dropped"
        if delta > 0:
            return "improved"
        return "same"


@dataclass(frozen=True, slots=True)
class CaseDelta:
    case_id: str
    checks: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class RankingChange:
    case_id: str
    before: tuple[str, ...]
    after: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Comparison:
    has_baseline: bool
    tolerance: float
    metrics: tuple[MetricDelta, ...]
    new_failures: tuple[CaseDelta, ...]
    known_failures: tuple[CaseDelta, ...]
    fixed: tuple[CaseDelta, ...]
    ranking_changes: tuple[RankingChange, ...]
    added_cases: tuple[str, ...]
    removed_cases: tuple[str, ...]
    config_changed: bool

    @property
    def regressed_metrics(self) -> tuple[MetricDelta, ...]:
        return tuple(m for m in self.metrics if m.status == "regressed")

    @property
    def improved_metrics(self) -> tuple[MetricDelta, ...]:
        return tuple(m for m in self.metrics if m.status == "improved")

    @property
    def passed(self) -> bool:
        return not self.new_failures and not self.regressed_metrics


def compare(current: Baseline, baseline: Baseline | None, *, tolerance: float) -> Comparison:
    """Judge a run's snapshot against the baseline (None: every failure is new)."""
    metrics = tuple(
        MetricDelta(
            name,
            baseline.metrics.get(name) if baseline is not None else None,
            current.metrics.get(name),
            name in GATED_METRICS,
            tolerance,
        )
        for name in (*RETRIEVAL_METRICS, *GRADE_METRICS)
    )
    new: list[CaseDelta] = []
    known: list[CaseDelta] = []
    fixed: list[CaseDelta] = []
    changes: list[RankingChange] = []
    added: list[str] = []
    removed: list[str] = []
    for prefix, now, before in (
        ("", current.cases, baseline.cases if baseline else {}),
        ("pipeline:", current.pipeline_cases, baseline.pipeline_cases if baseline else {}),
    ):
        for case_id, record in now.items():
            label = prefix + case_id
            old = before.get(case_id)
            if old is None and baseline is not None:
                added.append(label)
            old_failures = set(old.failures) if old is not None else set()
            fresh = tuple(c for c in record.failures if c not in old_failures)
            still = tuple(c for c in record.failures if c in old_failures)
            gone = tuple(c for c in (old.failures if old else ()) if c not in record.failures)
            if fresh:
                new.append(CaseDelta(label, fresh))
            if still:
                known.append(CaseDelta(label, still))
            if gone:
                fixed.append(CaseDelta(label, gone))
            if old is not None and old.documents != record.documents:
                changes.append(RankingChange(label, old.documents, record.documents))
        removed.extend(prefix + case_id for case_id in before if case_id not in now)
    return Comparison(
        has_baseline=baseline is not None,
        tolerance=tolerance,
        metrics=metrics,
        new_failures=tuple(new),
        known_failures=tuple(known),
        fixed=tuple(fixed),
        ranking_changes=tuple(changes),
        added_cases=tuple(added),
        removed_cases=tuple(removed),
        config_changed=baseline is not None and baseline.config != current.config,
    )


# --- reports/latest.md ------------------------------------------------------------------
