"""The refit of the quality constants: the logistic fit, the AUC and the rows it learns from."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from lookup_knowledge.engine import scoring
from lookup_knowledge.engine.corpus import load_documents
from lookup_knowledge.engine.index import KnowledgeIndex
from lookup_knowledge.evaluation.calibrate import (
    Query,
    Row,
    auc,
    brier,
    fit,
    log_loss,
    predict,
    reliability_report,
    report,
    rows_for,
    training,
    tune_rows,
    writer_report,
)
from lookup_knowledge.evaluation.devset import load_dev_corpora


def test_the_reliability_report_gives_each_band_its_share_right(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(scoring, "WEIGHTS", (1.0,))  # one feature: grade = sigmoid(feature)
    monkeypatch.setattr(scoring, "BIAS", 0.0)
    rows = [
        Row("a set", (0.1,), False),
        Row("a set", (0.45,), True),
        Row("a set", (0.45,), False),
        Row("a set", None, False),  # no candidate: no grade, not counted
    ]

    lines = reliability_report(rows)

    # sigmoid(0.1) = 0.52, sigmoid(0.45) = 0.61: two bands, of one case and of two
    assert lines[-2].split() == ["[0.50,", "0.60)", "1", "0.00"]
    assert lines[-1].split() == ["[0.60,", "0.75)", "2", "0.50"]


def test_the_fit_recovers_the_coefficients_that_generated_the_outcomes() -> None:
    rng = np.random.default_rng(3)
    x = rng.uniform(0, 1, size=(4000, 2))
    p = 1 / (1 + np.exp(-(x @ np.array([4.0, -2.0]) - 1.0)))
    y = (rng.uniform(size=4000) < p).astype(float)

    weights, bias = fit(x, y, ridge=0.0)

    assert np.allclose(weights, [4.0, -2.0], atol=0.5)
    assert abs(bias + 1.0) < 0.4


def test_auc_is_one_when_every_right_top_outscores_every_wrong_one_and_half_on_ties() -> None:
    right = np.array([True, True, False, False])

    assert auc(np.array([0.9, 0.8, 0.2, 0.1]), right) == 1.0
    assert auc(np.array([0.1, 0.2, 0.8, 0.9]), right) == 0.0
    assert auc(np.full(4, 0.5), right) == 0.5


def test_a_case_without_candidates_scores_zero() -> None:
    rows = [Row("set", None, False), Row("set", (1.0, 1.0, 1.0), True)]

    scores = predict(rows, np.ones(3), 0.0)

    assert scores[0] == 0.0
    assert scores[1] > 0.9


def test_rows_record_the_rank_first_document_and_whether_it_answers(tmp_path: Path) -> None:
    (tmp_path / "redis.md").write_text("# Redis memory usage high\n\nEvict keys when full.\n")
    (tmp_path / "disk.md").write_text("# Disk full\n\nFree space on the root volume.\n")
    index = KnowledgeIndex(load_documents(tmp_path))
    queries = [
        Query("redis memory high", None, frozenset({"redis.md"})),
        Query("redis memory high", None, frozenset({"disk.md"})),
        Query("qwzx plorf", None, frozenset()),
    ]

    rows = rows_for("tiny", index, queries)

    assert [r.right for r in rows] == [True, False, False]
    assert [r.answerable for r in rows] == [True, True, False]
    assert rows[0].features is not None and len(rows[0].features) == len(scoring.FEATURES)
    assert rows[2].features is None


def test_the_report_prints_the_fitted_constants_and_one_auc_line_per_set() -> None:
    rows = [
        Row(label, (share, share * 0.5, share, 1 - share), share > 0.5)
        for label in ("a", "b")
        for share in (0.1, 0.3, 0.45, 0.55, 0.7, 0.9)
    ]

    lines = report(rows)

    assert lines[1].split()[0] == scoring.FEATURES[0]
    assert sum(line.strip().startswith(("a ", "b ")) for line in lines) == 2


def test_the_report_counts_right_rank_first_documents_of_answerable_cases_only() -> None:
    features = (0.5, 0.25, 0.5, 0.5)
    rows = [
        Row("a", features, True),
        Row("a", features, False),
        Row("a", None, False),
        Row("a", features, False, answerable=False),  # a negative: never right, not counted
        Row("b", (0.9, 0.45, 0.9, 0.1), True),
        Row("b", (0.1, 0.05, 0.1, 0.9), False, answerable=False),
    ]

    lines = report(rows)

    [line_a] = [line for line in lines if line.strip().startswith("a ")]
    [line_b] = [line for line in lines if line.strip().startswith("b ")]
    assert line_a.endswith("0.333 (1/3)")
    assert line_b.endswith("1.000 (1/1)")


def test_log_loss_and_brier_score_the_outcomes_against_the_probabilities() -> None:
    right = np.array([True, False])

    assert log_loss(np.array([0.5, 0.5]), right) == pytest.approx(math.log(2))
    assert log_loss(np.array([1.0, 0.0]), right) < 1e-3  # clipped, never infinite
    assert log_loss(np.array([0.0, 1.0]), right) == pytest.approx(-math.log(1e-4))
    assert brier(np.array([1.0, 0.0]), right) == 0.0
    assert brier(np.array([0.0, 1.0]), right) == 1.0
    assert brier(np.array([0.5, 0.5]), right) == 0.25


def _rows(writer: str, *, flipped: bool = False) -> list[Row]:
    """Ten rows whose outcome mostly follows the share (one pair against it, so that no fit
    separates them perfectly); `flipped`: the opposite rule."""
    shares = (0.05, 0.15, 0.3, 0.4, 0.45, 0.55, 0.6, 0.7, 0.85, 0.95)
    rows = []
    for s in shares:
        right = (s > 0.5) != (s in (0.4, 0.6))
        rows.append(Row(writer, (s, s * 0.5, s, 1 - s), right != flipped, writer=writer))
    return rows


def test_each_writer_is_scored_by_a_fit_that_never_saw_its_rows() -> None:
    rows = [*_rows("a"), *_rows("b"), *_rows("odd", flipped=True), Row("tuning", None, False)]

    lines = writer_report(rows)

    by_writer = {line.split()[0]: line.split()[1:] for line in lines[4:]}
    assert list(by_writer) == ["a", "b", "odd"]
    cases, _, left_out_loss, *_ = by_writer["odd"]
    assert cases == "10"
    # Fitted on "a" and "b" alone, the grade is confidently wrong on "odd"; a fit that had
    # read "odd" too would have hedged.
    odd = [r for r in rows if r.writer == "odd"]
    with_odd = fit(*training(rows))
    hedged = log_loss(predict(odd, *with_odd), np.array([r.right for r in odd]))
    assert float(left_out_loss) > hedged + 0.5


def test_a_writer_of_negatives_only_has_no_auc_but_a_log_loss() -> None:
    negatives = [Row("vague", (0.1, 0.0, 0.0, 0.0), False, False, "v") for _ in range(4)]

    lines = writer_report([*_rows("a"), *_rows("b"), *negatives])

    cells = next(line.split() for line in lines if line.split()[:1] == ["v"])
    assert cells[1] == "4" and cells[-2:] == ["-", "-"]
    assert float(cells[2]) < 0.2  # low grades for cases nothing answers: a low log loss


def test_the_writer_table_needs_two_writers_and_is_part_of_the_report() -> None:
    one = _rows("a")

    assert writer_report(one) == []
    assert any("fitted without that writer" in line for line in report([*one, *_rows("b")]))


def test_each_development_case_is_named_by_its_file_s_writer(tmp_path: Path) -> None:
    cases = tmp_path / "cases"
    cases.mkdir()
    for name, ids in (("bundled.en.json", ["e1", "e2"]), ("bundled.x9.json", ["n1"])):
        payload = [
            {
                "id": i,
                "query": "q",
                "lang": "en",
                "kind": "short",
                "relevant": ["a.md"],
                "split": "tune",
            }
            for i in ids
        ]
        (cases / name).write_text(json.dumps(payload))

    corpora, _missing = load_dev_corpora(tmp_path, tmp_path / "corpora")

    assert corpora[0].writers == {"e1": "en", "e2": "en", "n1": "x9"}
    [only_x9], _ = load_dev_corpora(tmp_path, tmp_path / "corpora", {"x9"})
    assert only_x9.writers == {"n1": "x9"}


def test_a_corpus_declared_untouched_is_neither_fitted_on_nor_scored(tmp_path: Path) -> None:
    repo = Path(__file__).resolve().parents[2]
    (tmp_path / "eval").mkdir()
    (tmp_path / "eval" / "rag-retrieval").symlink_to(repo / "eval" / "rag-retrieval")
    cases = tmp_path / "eval" / "dev" / "cases"
    cases.mkdir(parents=True)
    corpora = tmp_path / "corpora"
    for name in ("acme", "fresh"):
        (corpora / name).mkdir(parents=True)
        (corpora / name / "a.md").write_text("# Widgets\n\nwidget calibration steps\n")
        case = {"id": f"{name}-1", "query": "widget calibration", "lang": "en"}
        case |= {"kind": "short", "relevant": ["a.md"], "split": "tune"}
        (cases / f"{name}.w.json").write_text(json.dumps([case]))
    (tmp_path / "eval" / "dev" / "corpora.json").write_text(
        json.dumps([{"name": "fresh", "untouched": True}, {"name": "acme"}])
    )

    labels = {row.label for row in tune_rows(tmp_path, corpora)}

    assert "acme" in labels and "tuning set" in labels
    assert "fresh" not in labels
