"""The side-by-side report of every evaluation set: a Markdown file and a console summary.

Holdout sets are shown in aggregate only (figures, per-kind and per-writer figures, score
bins), never case by case: they are looked at once, to report, not to tune on.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

from lookup_knowledge.evaluation.devset import MissingCorpus
from lookup_knowledge.evaluation.metrics import BIN_EDGES, Precision
from lookup_knowledge.evaluation.scorecard import Outcome, Scorecard, Share
from lookup_knowledge.evaluation.sets import TUNING_SET, EvalSet

Row = tuple[str, Callable[[Scorecard], str]]

# The figures the retrieval targets are stated in (docs/retrieval.md#targets), in order.
ROWS: tuple[Row, ...] = (
    ("cases (positive / negative)", lambda s: f"{s.cases} ({s.positives}/{s.cases - s.positives})"),
    ("Hit@1", lambda s: _num(s.hit_at_1)),
    ("Hit@5", lambda s: _num(s.hit_at_5)),
    ("MRR", lambda s: _num(s.mrr)),
    ("positives answered NO_EVIDENCE", lambda s: _share(s.false_no_evidence)),
    ("PRECISE precision", lambda s: _precision(s.precise)),
    ("REFERENCE precision", lambda s: _precision(s.reference)),
    ("negatives answered NO_EVIDENCE", lambda s: _share(s.negatives_silent)),
    ("· off-topic", lambda s: _share(s.off_topic_silent)),
    ("· near-miss", lambda s: _share(s.near_miss_silent)),
    ("· vague", lambda s: _share(s.vague_silent)),
    ("negatives graded PRECISE", lambda s: str(s.negatives_precise)),
)
KIND_COLUMNS: tuple[Row, ...] = (
    ("cases", lambda s: str(s.cases)),
    ("Hit@1", lambda s: _num(s.hit_at_1)),
    ("Hit@5", lambda s: _num(s.hit_at_5)),
    ("MRR", lambda s: _num(s.mrr)),
    ("false NO_EVIDENCE", lambda s: _share(s.false_no_evidence)),
    ("PRECISE prec.", lambda s: _precision(s.precise)),
    ("REFERENCE prec.", lambda s: _precision(s.reference)),
    ("negatives NO_EVIDENCE", lambda s: _share(s.negatives_silent)),
    ("negatives PRECISE", lambda s: str(s.negatives_precise) if s.positives < s.cases else "-"),
)


def render_sets_markdown(
    sets: Sequence[EvalSet], missing: Sequence[MissingCorpus], *, source_label: str
) -> str:
    lines = [
        "# Retrieval evaluation: every set side by side",
        "",
        f"The {TUNING_SET} is the golden cases of `eval/rag-retrieval/` (answers from "
        f"{source_label}); its figures measure the tuning. The development sets of `eval/dev/` "
        "were written from the documents alone and run through the embedded engine over their "
        "corpus; `tune` halves may be tuned on, `holdout` halves are only reported.",
        "",
        *_side_by_side(sets),
        *_missing(missing),
    ]
    for evaluation_set in sets:
        lines += _set_section(evaluation_set)
    return "\n".join(lines).rstrip() + "\n"


def console_summary(sets: Sequence[EvalSet], missing: Sequence[MissingCorpus]) -> list[str]:
    """The side-by-side figures as fixed-width text."""
    if not sets:
        return []
    cards = [s.scorecard for s in sets]
    width = max(len(label) for label, _ in ROWS) + 2
    columns = [max(14, len(s.label) + 2) for s in sets]
    lines = [" " * width + "".join(s.label.rjust(w) for s, w in zip(sets, columns, strict=True))]
    for label, cell in ROWS:
        values = "".join(cell(c).rjust(w) for c, w in zip(cards, columns, strict=True))
        lines.append(label.ljust(width) + values)
    for corpus in missing:
        lines.append(f"skipped {corpus.name}: not exported here ({corpus.export_command})")
    return lines


def _side_by_side(sets: Sequence[EvalSet]) -> list[str]:
    if not sets:
        return ["No evaluation set ran.", ""]
    cards = [s.scorecard for s in sets]
    lines = [
        "## Figures",
        "",
        "| | " + " | ".join(s.label for s in sets) + " |",
        "|---|" + "---:|" * len(sets),
    ]
    for label, cell in ROWS:
        lines.append(f"| {label} | " + " | ".join(cell(c) for c in cards) + " |")
    lines += [
        "",
        "Document level. Hit@k: a relevant document among the first k evidence documents; MRR: "
        "mean of 1 / position of the first relevant one; positives answered NO_EVIDENCE: the "
        "knowledge base answers the case but the agent was told it holds nothing. Grade "
        "precision: of the cases graded so, the share whose top document answers the case "
        "(negatives that get a grade count as wrong), with the counts. Negatives answered "
        "NO_EVIDENCE: off-topic (nothing to do with the corpus), near-miss (a neighbouring "
        "topic sharing its words) and vague (a complaint or a call for help that names nothing "
        "a page is about) apart.",
        "",
    ]
    return lines


def _missing(missing: Sequence[MissingCorpus]) -> list[str]:
    if not missing:
        return []
    lines = ["Development corpora not exported on this machine (skipped):", ""]
    for corpus in missing:
        lines.append(
            f"- `{corpus.name}`: expected in `{corpus.expected_dir}`; export it with "
            f"`{corpus.export_command}` (or pass `--corpora-dir`)"
        )
    return [*lines, ""]


def _set_section(evaluation_set: EvalSet) -> list[str]:
    lines = [f"## {evaluation_set.label}", ""]
    kinds = evaluation_set.by_kind
    if kinds:
        lines += [
            "| kind | " + " | ".join(name for name, _ in KIND_COLUMNS) + " |",
            "|---|" + "---:|" * len(KIND_COLUMNS),
        ]
        for kind, card in kinds.items():
            lines.append(f"| {kind} | " + " | ".join(cell(card) for _, cell in KIND_COLUMNS) + " |")
        lines.append("")
    writers = evaluation_set.by_writer
    if len(writers) > 1:
        lines += [
            "| writer | " + " | ".join(name for name, _ in KIND_COLUMNS) + " |",
            "|---|" + "---:|" * len(KIND_COLUMNS),
        ]
        for writer, card in writers.items():
            lines.append(
                f"| {writer} | " + " | ".join(cell(card) for _, cell in KIND_COLUMNS) + " |"
            )
        lines.append("")
    lines += _bins(evaluation_set.outcomes)
    if evaluation_set.per_case:
        lines += _cases(evaluation_set.per_case)
    return lines


def _bins(outcomes: Sequence[Outcome]) -> list[str]:
    """How often the top document is right, by the top quality score (the calibration)."""
    answered = [o for o in outcomes if o.answered and o.top_score is not None]
    if not answered:
        return []
    lines = [
        "Top quality score against whether the top document answers the case:",
        "",
        "| top score | right | wrong (negatives included) | share right |",
        "|---|---:|---:|---:|",
    ]
    edges: list[float | None] = [*BIN_EDGES, None]
    for low, high in itertools.pairwise(edges):
        assert low is not None
        inside = [
            o
            for o in answered
            if o.top_score is not None
            and (o.top_score >= low if high is None else low <= o.top_score < high)
        ]
        if not inside:
            continue
        right = sum(o.top_correct for o in inside)
        span = f"{low:.2f}" if high is None else f"[{low:.2f}, {high:.2f})"
        lines.append(f"| {span} | {right} | {len(inside) - right} | {right / len(inside):.2f} |")
    return [*lines, ""]


def _cases(per_case: Sequence[tuple[str, Outcome]]) -> list[str]:
    lines = [
        "| case | kind | query | relevant | evidence documents, best first | level | score "
        "| first relevant at |",
        "|---|---|---|---|---|---|---:|---:|",
    ]
    for query, o in per_case:
        first = next((str(i) for i, d in enumerate(o.documents, 1) if d in o.relevant), "-")
        level = o.level.value if o.level is not None else ("-" if not o.answered else "none")
        top = f"{o.top_score:.4f}" if o.top_score is not None else "-"
        lines.append(
            f"| {o.case_id} | {o.kind} | {_cell(query, 90)} | {_docs(sorted(o.relevant))} | "
            f"{_docs(o.documents)} | {level} | {top} | {first if o.relevant else 'n/a'} |"
        )
    return [*lines, ""]


def _num(value: float | None) -> str:
    return f"{value:.3f}" if value is not None else "-"


def _share(share: Share) -> str:
    if not share.whole:
        return "-"
    return f"{share.part}/{share.whole} ({share.part / share.whole:.0%})"


def _precision(precision: Precision) -> str:
    if not precision.count:
        return "- (0)"
    return f"{precision.correct / precision.count:.3f} ({precision.correct}/{precision.count})"


def _docs(documents: Sequence[str]) -> str:
    return ", ".join(f"`{d}`" for d in documents) if documents else "none"


def _cell(text: str, limit: int) -> str:
    flat = " ".join(text.split()).replace("|", "\\|")
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
