"""The baseline, the diff of a run against it, and the readable `reports/latest.md`.

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
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from lookup_knowledge.evaluation.metrics import (
    Calibration,
    Suggestion,
    TopHit,
    precision_at_or_above,
)
from lookup_knowledge.evaluation.suite import (
    GRADE_METRICS,
    METRIC_LABELS,
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


def render_markdown(suite: SuiteResult, comparison: Comparison, *, source_label: str) -> str:
    golden = suite.golden
    positives = [r for r in golden if not r.case.is_negative]
    negatives = [r for r in golden if r.case.is_negative]
    lines = [
        "# RAG retrieval evaluation: latest run",
        "",
        "Written by `lookup-knowledge eval` on every run; "
        "`eval/rag-retrieval/README.md` explains the suite.",
        "",
        f"- Source of the py-rag answers: {source_label}",
        f"- Golden cases: {len(golden)} ({len(positives)} with expected documents, "
        f"{len(negatives)} negative); pipeline cases: {len(suite.pipeline)}",
        f"- Limits: {_limits(suite)}",
        f"- Result: {_verdict(comparison)}",
        "",
        f"## Metrics (document level, over the {len(positives)} cases with expected documents)",
        "",
        "| metric | now | baseline | change | |",
        "|---|---:|---:|---:|---|",
    ]
    for m in comparison.metrics:
        lines.append(
            f"| {METRIC_LABELS[m.name]} | {_num(m.current)} | {_num(m.baseline)} | "
            f"{_signed(m.delta)} | {_metric_note(m)} |"
        )
    lines += [
        "",
        "Hit@k: share of cases with an expected document among the first k evidence documents. "
        "Recall@5: share of the expected documents found in the first five (below 1 when a "
        "multi-topic case finds one of its two). MRR: mean of 1 / position of the first "
        "expected document (0 when none). nDCG@5: how close the order is to all expected "
        "documents first. PRECISE / REFERENCE precision: share of the cases graded so whose top "
        "hit is an expected document (negative cases that return evidence count as wrong). "
        "NO_EVIDENCE accuracy: share of negative cases answered NO_EVIDENCE. "
        f"Gated metrics fail the run when they drop by more than {comparison.tolerance:g}.",
        "",
        "## Behaviour",
        "",
    ]
    failing = suite.failed
    total = len(suite.golden) + len(suite.pipeline)
    lines.append(f"{total - len(failing)} of {total} cases pass every assertion.")
    lines.append("")
    if failing:
        known = {d.case_id: set(d.checks) for d in comparison.known_failures}
        lines += [
            "| case | query | failing assertion | detail | baseline |",
            "|---|---|---|---|---|",
        ]
        for result in failing:
            label = (
                result.case.id if isinstance(result, CaseResult) else f"pipeline:{result.case.id}"
            )
            for failure in result.failures:
                state = "known" if failure.check in known.get(label, set()) else "**new**"
                lines.append(
                    f"| {label} | {_cell(result.case.query, 60)} | {failure.check} | "
                    f"{_cell(failure.detail, 160)} | {state} |"
                )
        lines.append("")
    lines += _changes(comparison)
    lines += _calibration(suite.calibration, suite)
    lines += _case_table(golden)
    lines += _pipeline_table(suite.pipeline)
    return "\n".join(lines).rstrip() + "\n"


def _verdict(comparison: Comparison) -> str:
    if comparison.passed:
        known = len(comparison.known_failures)
        suffix = f" ({known} known failing cases, held in the baseline)" if known else ""
        base = "" if comparison.has_baseline else " (no baseline yet)"
        return f"**PASS**{suffix}{base}"
    reasons = []
    if comparison.new_failures:
        reasons.append(f"{len(comparison.new_failures)} cases with new failing assertions")
    if comparison.regressed_metrics:
        names = ", ".join(METRIC_LABELS[m.name] for m in comparison.regressed_metrics)
        reasons.append(f"metrics dropped beyond {comparison.tolerance:g}: {names}")
    return "**FAIL**: " + "; ".join(reasons)


def _metric_note(m: MetricDelta) -> str:
    if m.status == "regressed":
        return "**regressed**"
    if m.status == "improved":
        return "improved"
    if m.status == "dropped":
        return "dropped, within tolerance" if m.gated else "dropped (not gated)"
    return "" if m.gated else "not gated"


def _changes(comparison: Comparison) -> list[str]:
    lines = ["## Against the baseline", ""]
    if not comparison.has_baseline:
        return [
            *lines,
            "No baseline yet: `lookup-knowledge eval --update-baseline` records one.",
            "",
        ]
    if comparison.config_changed:
        lines += ["- The limits differ from the baseline's: the figures are not like for like.", ""]
    for title, deltas in (
        ("New failing assertions", comparison.new_failures),
        ("Fixed assertions", comparison.fixed),
    ):
        if deltas:
            listed = "; ".join(f"{d.case_id} ({', '.join(d.checks)})" for d in deltas)
            lines.append(f"- {title}: {listed}")
    if comparison.known_failures:
        listed = ", ".join(d.case_id for d in comparison.known_failures)
        lines.append(f"- Known failures, held in the baseline: {listed}")
    if comparison.added_cases:
        lines.append("- Cases new since the baseline: " + ", ".join(comparison.added_cases))
    if comparison.removed_cases:
        lines.append("- Cases gone since the baseline: " + ", ".join(comparison.removed_cases))
    if comparison.ranking_changes:
        lines.append("- Evidence documents changed:")
        for change in comparison.ranking_changes:
            lines.append(f"  - {change.case_id}: {_docs(change.before)} → {_docs(change.after)}")
    if len(lines) == 2:
        lines.append("- Nothing changed.")
    return [*lines, ""]


def _calibration(calibration: Calibration, suite: SuiteResult) -> list[str]:
    limits = suite.config.pipeline
    lines = [
        "## Calibration of the grades",
        "",
        "Of the cases graded PRECISE / REFERENCE, how often is the top hit an expected document?",
        "",
        "| grade | cases | top hit expected | precision |",
        "|---|---:|---:|---:|",
    ]
    for level, precision in calibration.by_level.items():
        if level == "none" and not precision.count:
            continue
        name = level if level != "none" else "no level (evidence, ungraded)"
        lines.append(
            f"| {name} | {precision.count} | {precision.correct} | {_num(precision.value)} |"
        )
    lines += [
        "",
        "Top quality score (the score the grade is made from) of right and wrong top hits:",
        "",
        "| top score | right top hit | wrong top hit |",
        "|---|---:|---:|",
    ]
    for b in calibration.bins:
        span = f"{b.low:.2f}" if b.high is None else f"[{b.low:.2f}, {b.high:.2f})"
        lines.append(f"| {span} | {b.correct} | {b.incorrect} |")
    top_hits = [r.top_hit for r in suite.golden if r.top_hit is not None]
    wrong = [r for r in suite.golden if r.top_hit is not None and not r.top_hit.correct]
    if wrong:
        lines += ["", "Wrong top hits:", ""]
        for r in wrong:
            top = r.top_hit
            assert top is not None
            level = top.level.value if top.level is not None else "no level"
            lines.append(
                f"- {r.case.id}: `{r.documents[0]}` graded {level} at {top.score:.4f}; expected "
                f"{_docs(r.case.expected_documents)}"
            )
    lines += [
        "",
        "Suggested thresholds: the lowest recorded top score from which the top hits reach "
        "the target precision (`--target-precision` for PRECISE, `--reference-precision` for "
        "REFERENCE).",
        "",
        _suggestion("PRECISE", calibration.precise, limits.precise_threshold, top_hits),
        _suggestion("REFERENCE", calibration.reference, limits.reference_threshold, top_hits),
        "",
        f"{sum(t.score >= 1.0 for t in top_hits)} of the {len(top_hits)} top scores sit at the "
        "1.0 cap, where the score cannot tell them apart; the bundled engine returns no hit "
        "under its own 0.5 cut, so the data cannot speak for a threshold below 0.5.",
        "",
    ]
    return lines


def _suggestion(
    level: str, suggestion: Suggestion, current: float, top_hits: Sequence[TopHit]
) -> str:
    head = f"- {level} (precision ≥ {suggestion.target:g}): "
    if suggestion.threshold is not None:
        p = suggestion.precision
        head += (
            f"**{suggestion.threshold:.4g}** (precision {_num(p.value)} over {p.count} cases "
            f"at or above it)"
        )
    elif suggestion.best_threshold is not None:
        p = suggestion.precision
        head += (
            f"out of reach on this data; the best is {_num(p.value)} over {p.count} cases "
            f"from {suggestion.best_threshold:.4g}"
        )
    else:
        head += "no graded top hit recorded"
    now = precision_at_or_above(top_hits, current)
    return head + f"; the current {current:g} gives {_num(now.value)} over {now.count}."


def _case_table(golden: Sequence[CaseResult]) -> list[str]:
    lines = [
        "## Golden cases",
        "",
        "| case | lang | tags | expected | evidence documents, best first | level | top score "
        "| first expected at | result |",
        "|---|---|---|---|---|---|---:|---:|---|",
    ]
    for r in golden:
        run = r.run
        level = run.result.relevance_level.value if run and run.result.relevance_level else "-"
        score = f"{run.lookup.top_similarity:.4f}" if run and run.lookup.top_similarity else "-"
        first = next(
            (str(i) for i, d in enumerate(r.documents, 1) if d in r.case.expected_documents), "-"
        )
        result = "pass" if r.passed else "**fail**: " + ", ".join(f.check for f in r.failures)
        lines.append(
            f"| {r.case.id} | {r.case.lang} | {', '.join(r.case.tags)} | "
            f"{_docs(r.case.expected_documents)} | {_docs(r.documents)} | {level} | {score} | "
            f"{first if not r.case.is_negative else 'n/a'} | {result} |"
        )
    return [*lines, ""]


def _pipeline_table(results: Sequence[PipelineResult]) -> list[str]:
    if not results:
        return []
    lines = ["## Pipeline cases", "", "| case | what it pins | result |", "|---|---|---|"]
    for r in results:
        result = "pass" if r.passed else "**fail**: " + ", ".join(f.check for f in r.failures)
        lines.append(f"| {r.case.id} | {_cell(r.case.note, 200)} | {result} |")
    return [*lines, ""]


def _limits(suite: SuiteResult) -> str:
    p, q = suite.config.pipeline, suite.config.projection
    return (
        f"MAX_CHUNKS_PER_DOCUMENT={p.max_chunks_per_document}, RETURN_N={p.return_n}, "
        f"PRECISE_THRESHOLD={p.precise_threshold:g}, "
        f"REFERENCE_THRESHOLD={p.reference_threshold:g}, "
        f"PACK_CHAR_BUDGET={p.pack_char_budget}, projection {q.max_query_chars}/{q.max_evidence}/"
        f"{q.max_excerpt_chars}/{q.max_bytes}, PYRAG_TOP_K={suite.config.top_k}, "
        f"PYRAG_MODE={suite.config.mode}"
    )


def _docs(documents: Sequence[str]) -> str:
    return ", ".join(f"`{d}`" for d in documents) if documents else "none"


def _num(value: float | None) -> str:
    return f"{value:.3f}" if value is not None else "-"


def _signed(value: float | None) -> str:
    return f"{value:+.3f}" if value is not None else "-"


def _cell(text: str, limit: int) -> str:
    flat = " ".join(text.split()).replace("|", "\\|")
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
