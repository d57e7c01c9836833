"""`lookup-knowledge eval` end to end over a copy of the committed eval/ folder."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from lookup_knowledge.evaluation.cli import main
from lookup_knowledge.pipeline import run as pipeline_run
from lookup_knowledge.pipeline.postprocess import postprocess

REPO = Path(__file__).resolve().parents[2]
EVAL = Path("eval") / "rag-retrieval"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A repository root holding a copy of eval/rag-retrieval (the run writes reports)."""
    shutil.copytree(REPO / EVAL, tmp_path / EVAL)
    return tmp_path


def latest(root: Path) -> str:
    return (root / EVAL / "reports" / "latest.md").read_text(encoding="utf-8")


def test_the_offline_evaluation_over_the_committed_fixtures_passes(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (root / EVAL / "reports" / "latest.md").unlink(missing_ok=True)

    assert main(["--root", str(root)]) == 0
    assert "PASS" in capsys.readouterr().out
    report = latest(root)
    assert "Result: **PASS**" in report
    assert "| Hit@1 |" in report and "## Calibration of the grades" in report


def test_a_postprocessor_ignoring_the_per_document_cap_fails_the_evaluation(
    root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def no_cap(hits: Any, *, limits: Any) -> Any:
        return postprocess(hits, limits=dataclasses.replace(limits, max_chunks_per_document=99))

    monkeypatch.setattr(pipeline_run, "postprocess", no_cap)

    assert main(["--root", str(root)]) == 1
    out = capsys.readouterr().out
    assert "NEW FAILURE canonical-redis-memory: rule.selection" in out
    assert "Result: **FAIL**" in latest(root)


def test_a_postprocessor_ordering_by_score_instead_of_rank_fails_the_evaluation(
    root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def by_score(hits: Any, *, limits: Any) -> Any:
        ordered = sorted(hits, key=lambda hit: -hit.score)
        reranked = [h._replace(original_rank=i) for i, h in enumerate(ordered, 1)]
        return postprocess(reranked, limits=limits)

    monkeypatch.setattr(pipeline_run, "postprocess", by_score)

    assert main(["--root", str(root)]) == 1
    out = capsys.readouterr().out
    assert "NEW FAILURE pipeline:spec-worked-example: expect.evidence, rule.selection" in out


def test_a_metric_below_the_baseline_beyond_the_tolerance_fails(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = root / EVAL / "reports" / "baseline.json"
    baseline = json.loads(path.read_text(encoding="utf-8"))
    baseline["metrics"]["mrr"] += 0.05  # as if the last accepted run had been better
    path.write_text(json.dumps(baseline), encoding="utf-8")

    assert main(["--root", str(root)]) == 1
    assert "REGRESSED MRR" in capsys.readouterr().out
    assert main(["--root", str(root), "--tolerance", "0.06"]) == 0


def test_update_baseline_accepts_the_run_and_a_missing_fixture_then_fails(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (root / EVAL / "reports" / "baseline.json").unlink()

    assert main(["--root", str(root), "--update-baseline"]) == 0
    assert main(["--root", str(root)]) == 0
    (root / EVAL / "fixtures" / "canonical-redis-memory.json").unlink()
    assert main(["--root", str(root)]) == 1
    assert "NEW FAILURE canonical-redis-memory: error" in capsys.readouterr().out
    assert "no fixture canonical-redis-memory.json" in latest(root)


def test_a_fixture_recorded_for_another_query_is_reported_stale(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = root / EVAL / "cases" / "golden-cases.json"
    cases = json.loads(path.read_text(encoding="utf-8"))
    cases[0]["query"] += " (edited)"
    path.write_text(json.dumps(cases, ensure_ascii=False), encoding="utf-8")

    assert main(["--root", str(root)]) == 1
    assert "stale fixture" in latest(root)


def test_record_rewrites_the_fixtures_from_the_embedded_engine(root: Path) -> None:
    cases_path = root / EVAL / "cases" / "golden-cases.json"
    cases = json.loads(cases_path.read_text(encoding="utf-8"))
    kept = [c for c in cases if c["id"] in ("canonical-redis-memory", "negative-sourdough-bread")]
    cases_path.write_text(json.dumps(kept, ensure_ascii=False), encoding="utf-8")

    assert main(["--root", str(root), "--record"]) in (0, 1)  # 1: no longer the baseline's cases
    fixtures = sorted(p.name for p in (root / EVAL / "fixtures").glob("*.json"))
    assert fixtures == ["canonical-redis-memory.json", "negative-sourdough-bread.json"]
    recorded = json.loads((root / EVAL / "fixtures" / "canonical-redis-memory.json").read_text())
    assert recorded["request"]["body"] == {
        "query": "redis memory usage high",
        "top_k": 20,
        "mode": "hybrid",
    }
    assert recorded["response"]["body"]["hits"]


@pytest.mark.parametrize(
    "argv",
    [
        ["--no-such-flag"],
        ["--tolerance", "2"],
        ["--live", "ftp://example"],
        ["--live", "http://127.0.0.1:9", "--update-baseline"],
    ],
)
def test_usage_errors_exit_with_2(root: Path, argv: list[str]) -> None:
    assert main(["--root", str(root), *argv]) == 2


def test_a_folder_without_golden_cases_is_a_usage_error(tmp_path: Path) -> None:
    assert main(["--root", str(tmp_path)]) == 2
