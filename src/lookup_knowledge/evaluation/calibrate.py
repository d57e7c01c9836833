"""Refit the constants of the engine's `quality_score` from the tune data, reproducibly.

    python -m lookup_knowledge.evaluation.calibrate [--root DIR] [--corpora-dir DIR]

The outcome to predict is whether the rank-first document answers the question (a negative
case's never does). Each case of the tuning set (`eval/rag-retrieval/`, over the bundled
knowledge base) and each `tune` case of the development set (`eval/dev/`, over its corpus)
is run through the embedded engine with no threshold; the grading features
(`engine.scoring.FEATURES`) of its rank-first hit and the outcome make one row. A logistic
regression (Newton's method, a light ridge) over all rows gives `WEIGHTS` and `BIAS`.

It prints them, then for each set the AUC of the top quality (right top documents against
wrong ones and negatives) three ways: with the engine's current constants, with the constants
fitted here, and fitted on every other set but that one (leave one set out), which shows how
the grade carries over to a corpus the fit has not seen (docs/retrieval.md#calibration);
and the ranking alone, with no threshold: how many of the set's answerable cases have a
right rank-first document. Then, per writer of the development set (the `<writer>` of
`cases/<corpus>.<writer>.json`), the log loss, Brier score and AUC of the top quality with
the current constants and fitted without that writer's files: how well the grade carries
over to questions written by someone the fit has not read, the way new users will ask.
Holdout cases are never read.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from lookup_knowledge.engine import scoring
from lookup_knowledge.engine.corpus import load_documents
from lookup_knowledge.engine.index import KnowledgeIndex, NoEvidenceBasis
from lookup_knowledge.evaluation.cases import load_golden_cases
from lookup_knowledge.evaluation.devset import load_dev_corpora
from lookup_knowledge.evaluation.locations import Paths, find_root
from lookup_knowledge.evaluation.metrics import TopHit, score_bins

RIDGE = 0.01  # L2 penalty on the weights (not the bias): keeps the fit stable on small sets


@dataclass(frozen=True, slots=True)
class Row:
    """The rank-first hit of one case: its features (None: no candidate at all) and outcome."""

    label: str  # the set the case belongs to
    features: tuple[float, ...] | None
    right: bool
    answerable: bool = True  # False for a negative case (no document answers it)
    writer: str | None = None  # the development case file's writer (None: the tuning set)


@dataclass(frozen=True, slots=True)
class Query:
    text: str
    filters: dict[str, str] | None
    relevant: frozenset[str]
    writer: str | None = None


def rows_for(label: str, index: KnowledgeIndex, queries: Sequence[Query]) -> list[Row]:
    rows = []
    for query in queries:
        graded = index.grade(query.text, query.filters)
        answerable = bool(query.relevant)
        if isinstance(graded, NoEvidenceBasis):
            rows.append(Row(label, None, False, answerable, query.writer))
            continue
        first = int(graded.order[0])
        source = index.chunk(int(graded.candidates[first])).source
        features = tuple(float(v) for v in graded.features[first])
        rows.append(Row(label, features, source in query.relevant, answerable, query.writer))
    return rows


def tune_rows(root: Path, corpora_dir: Path | None = None) -> list[Row]:
    """Rows of the tuning set and of every exported development corpus's tune half, but the
    corpora declared untouched."""
    paths = Paths(root, None, corpora_dir)
    bundled = KnowledgeIndex(load_documents())
    golden = [
        Query(c.query, dict(c.filters) if c.filters else None, frozenset(c.expected_documents))
        for c in load_golden_cases(paths.golden)
    ]
    rows = rows_for("tuning set", bundled, golden)
    corpora, _missing = load_dev_corpora(paths.dev, paths.corpora)
    for corpus in corpora:
        if corpus.untouched:  # kept like a holdout: never fitted on (eval/dev/README.md)
            continue
        index = (
            bundled if corpus.docs_dir is None else KnowledgeIndex(load_documents(corpus.docs_dir))
        )
        queries = [
            Query(c.query, None, frozenset(c.relevant), corpus.writers[c.id])
            for c in corpus.selected(("tune",))
        ]
        rows += rows_for(corpus.name, index, queries)
    return rows


def fit(
    x: np.ndarray, y: np.ndarray, *, ridge: float = RIDGE, sample: np.ndarray | None = None
) -> tuple[np.ndarray, float]:
    """Logistic regression by Newton's method: (weights, bias)."""
    design = np.column_stack((x, np.ones(len(x))))
    sample = np.ones(len(x)) if sample is None else sample
    beta = np.zeros(design.shape[1])
    penalty = np.full(design.shape[1], ridge)
    penalty[-1] = 0.0
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-(design @ beta)))
        gradient = design.T @ (sample * (y - p)) - penalty * beta
        hessian = (design * (sample * p * (1 - p))[:, None]).T @ design + np.diag(penalty)
        step = np.linalg.solve(hessian, gradient)
        beta += step
        if float(np.abs(step).max()) < 1e-9:
            break
    return beta[:-1], float(beta[-1])


def predict(rows: Sequence[Row], weights: np.ndarray, bias: float) -> np.ndarray:
    """The quality each row's top hit would get (0 for a case with no candidate)."""
    out = np.zeros(len(rows))
    for i, row in enumerate(rows):
        if row.features is not None:
            out[i] = 1.0 / (1.0 + math.exp(-(float(np.dot(row.features, weights)) + bias)))
    return out


def auc(scores: np.ndarray, right: np.ndarray) -> float:
    """Chance that a right top document scores above a wrong one (ties count half)."""
    pos, neg = scores[right], scores[~right]
    if not len(pos) or not len(neg):
        return float("nan")
    greater = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return float(greater / (len(pos) * len(neg)))


def training(rows: Sequence[Row]) -> tuple[np.ndarray, np.ndarray]:
    kept = [r for r in rows if r.features is not None]
    x = np.array([r.features for r in kept], dtype=np.float64)
    return x, np.array([r.right for r in kept], dtype=np.float64)


def report(rows: Sequence[Row]) -> list[str]:
    x, y = training(rows)
    weights, bias = fit(x, y)
    current = (np.asarray(scoring.WEIGHTS), scoring.BIAS)
    lines = ["fitted on every set:"]
    lines += [f"  {name:<20} {w:8.3f}" for name, w in zip(scoring.FEATURES, weights, strict=True)]
    lines += [f"  {'bias':<20} {bias:8.3f}", ""]
    lines.append(
        f"{'AUC of the top quality':<24}{'cases':>6}{'current':>9}{'fitted':>9}{'left out':>10}"
        f"{'rank-first right, no threshold':>34}"
    )
    for label in dict.fromkeys(r.label for r in rows):
        inside = [r for r in rows if r.label == label]
        others = [r for r in rows if r.label != label]
        right = np.array([r.right for r in inside])
        loco = fit(*training(others))
        answerable = [r for r in inside if r.answerable]
        ranked = sum(r.right for r in answerable)
        share = (
            f"{ranked / len(answerable):.3f} ({ranked}/{len(answerable)})" if answerable else "-"
        )
        lines.append(
            f"  {label:<22}{len(inside):>6}"
            f"{_auc_cell(predict(inside, *current), right)}"
            f"{_auc_cell(predict(inside, weights, bias), right)}"
            f" {_auc_cell(predict(inside, *loco), right)}"
            f"{share:>34}"
        )
    return lines + writer_report(rows) + reliability_report(rows)


def log_loss(scores: np.ndarray, right: np.ndarray) -> float:
    """Mean negative log-likelihood of the outcomes under the scores (clipped off 0 and 1)."""
    p = np.clip(scores, 1e-4, 1 - 1e-4)
    return float(-np.mean(np.where(right, np.log(p), np.log(1 - p))))


def brier(scores: np.ndarray, right: np.ndarray) -> float:
    """Mean squared distance of the scores from the outcomes (1 right, 0 not)."""
    return float(np.mean((scores - right.astype(np.float64)) ** 2))


def writer_report(rows: Sequence[Row]) -> list[str]:
    """Per development writer: the current constants against a fit without that writer's
    rows (every other row kept, the tuning set's included), on that writer's rows."""
    writers = [w for w in dict.fromkeys(r.writer for r in rows) if w is not None]
    if len(writers) < 2:
        return []
    current = (np.asarray(scoring.WEIGHTS), scoring.BIAS)
    lines = [
        "",
        "each writer's top quality: the current constants, and fitted without that writer's files",
        f"{'':<30}{'log loss':>18}{'Brier':>18}{'AUC':>18}",
        f"{'':<24}{'cases':>6}{'current':>9}{'left out':>9}"
        f"{'current':>9}{'left out':>9}{'current':>9}{'left out':>9}",
    ]
    for writer in writers:
        inside = [r for r in rows if r.writer == writer]
        fitted = fit(*training([r for r in rows if r.writer != writer]))
        right = np.array([r.right for r in inside])
        before, after = predict(inside, *current), predict(inside, *fitted)
        lines.append(
            f"  {writer:<22}{len(inside):>6}"
            f"{log_loss(before, right):9.3f}{log_loss(after, right):9.3f}"
            f"{brier(before, right):9.3f}{brier(after, right):9.3f}"
            f"{_auc_cell(before, right)}{_auc_cell(after, right)}"
        )
    return lines


RELIABILITY_EDGES = (0.0, 0.2, 0.3, 0.4, 0.5, 0.6, 0.75, 0.9, 1.0)


def reliability_report(rows: Sequence[Row]) -> list[str]:
    """Per set, with the current constants: how often a top hit graded in each band is right
    (cases with no candidate at all left out: they have no grade). A calibrated grade is
    right about as often as its band says, on every set."""
    current = (np.asarray(scoring.WEIGHTS), scoring.BIAS)
    lines = ["", "reliability of the current constants: top hits by grade band, share right"]
    for label in dict.fromkeys(r.label for r in rows):
        graded = [r for r in rows if r.label == label and r.features is not None]
        hits = [
            TopHit(label, float(score), None, r.right)
            for r, score in zip(graded, predict(graded, *current), strict=True)
        ]
        lines.append(f"  {label}")
        for band in score_bins(hits, RELIABILITY_EDGES):
            cases = band.correct + band.incorrect
            where = f"[{band.low:.2f}, {band.high:.2f})" if band.high is not None else "1.00"
            lines.append(f"    {where:<13}{cases:>5}{band.correct / cases:>7.2f}")
    return lines


def _auc_cell(scores: np.ndarray, right: np.ndarray) -> str:
    """The AUC, or `-` where it is undefined: no right top document among the rows (a writer
    of negatives only; the log loss and Brier score still say how low its grades stayed), or
    no wrong one."""
    value = auc(scores, right)
    return f"{'-':>9}" if math.isnan(value) else f"{value:9.3f}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lookup_knowledge.evaluation.calibrate", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--root", type=Path, default=None, help="repository root")
    parser.add_argument("--corpora-dir", type=Path, default=None, help="exported corpora")
    args = parser.parse_args(argv)
    for line in report(tune_rows(find_root(args.root), args.corpora_dir)):
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
