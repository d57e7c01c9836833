"""The readable `reports/latest.md`: figures, changes against the baseline, calibration, cases."""

from __future__ import annotations

from collections.abc import Sequence

from lookup_knowledge.evaluation.baseline import Comparison, MetricDelta
from lookup_knowledge.evaluation.metrics import (
    Calibration,
    Suggestion,
    TopHit,
    precision_at_or_above,
)
from lookup_knowledge.evaluation.suite import (
    METRIC_LABELS,
    CaseResult,
    PipelineResult,
    SuiteResult,
)


def render_markdown(suite: SuiteResult, comparison: Comparison, *, source_label: str) -> str:
    golden = suite.golden
    positives = [r for r in golden if not r.case.is_negative]
    negatives = [r for r in golden if r.case.is_negative]
    lines = [
        "# Tuning set (golden cases): latest run",
        "",
        "Written by `lookup-knowledge eval` (the offline run over the recorded fixtures; a live "
        "run writes `var/eval/latest-live.md`); `eval/rag-retrieval/README.md` explains the "
        "suite. These cases were known while the engine was tuned: their figures measure the "
        "tuning. The development sets (`eval/dev/`, `var/eval/sets.md`) measure the engine.",
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
        "## Tuning-set cases",
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
