"""`lookup-knowledge eval` over the development sets: splits, missing corpora, where it writes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from builders import dev_case
from lookup_knowledge.evaluation.cli import main
from lookup_knowledge.evaluation.locations import find_root

REPO = Path(__file__).resolve().parents[2]
GOLDEN = Path("eval") / "rag-retrieval"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A repository root with a small development set over the bundled knowledge base."""
    cases = tmp_path / "eval" / "dev" / "cases"
    cases.mkdir(parents=True)
    bundled = [
        dev_case("t-redis", "redis memory usage high", ["redis/redis-memory.md"], "tune", "short"),
        dev_case("t-bread", "how to bake sourdough bread", [], "tune", "negative-off-topic"),
        dev_case(
            "h-disk",
            "disk full no space left on device",
            ["host/disk-full.zh.md"],
            "holdout",
            "short",
        ),
    ]
    (cases / "bundled.test.json").write_text(json.dumps(bundled), encoding="utf-8")
    other = [dev_case("o-1", "widget calibration", ["x.md"], "tune", "short")]
    (cases / "acme-docs.test.json").write_text(json.dumps(other), encoding="utf-8")
    return tmp_path


def sets_report(root: Path) -> str:
    return (root / "var" / "eval" / "sets.md").read_text(encoding="utf-8")


def test_by_default_only_the_tune_half_runs_and_it_is_shown_case_by_case(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--root", str(root), "--only", "dev"]) == 0

    out = capsys.readouterr().out
    assert "bundled · tune" in out and "holdout" not in out
    report = sets_report(root)
    assert "| t-redis | short |" in report and "`redis/redis-memory.md`" in report
    assert "h-disk" not in report


def test_a_holdout_half_is_reported_in_aggregate_but_never_case_by_case(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--root", str(root), "--only", "dev", "--split", "all"]) == 0

    report = sets_report(root)
    assert "## bundled · holdout" in report and "| bundled · tune | bundled · holdout |" in (
        report.replace("| | ", "| ")
    )
    assert "h-disk" not in report and "disk full no space" not in report
    assert "holdout" in capsys.readouterr().out


def test_a_corpus_that_is_not_exported_is_skipped_with_the_command_that_exports_it(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--root", str(root), "--only", "dev"]) == 0

    out = capsys.readouterr().out
    assert "skipped acme-docs" in out and "export_corpus.py acme-docs" in out
    assert "python eval/dev/export_corpus.py acme-docs" in sets_report(root)


def run_acme_exported(root: Path, tmp_path: Path) -> int:
    """Export acme-docs (one page) into a corpora folder of its own and run its cases."""
    corpora = tmp_path / "exports"
    (corpora / "acme-docs").mkdir(parents=True)
    (corpora / "acme-docs" / "x.md").write_text("# Widgets\n\nwidget calibration steps\n", "utf-8")
    argv = ["--root", str(root), "--only", "dev", "--corpus", "acme-docs"]
    return main([*argv, "--corpora-dir", str(corpora)])


def test_an_exported_corpus_is_indexed_from_the_corpora_folder(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_acme_exported(root, tmp_path) == 0

    out = capsys.readouterr().out
    assert "acme-docs · tune" in out and "bundled" not in out
    assert "| o-1 | short | widget calibration | `x.md` | `x.md` |" in sets_report(root)


def test_a_corpus_declared_untouched_reports_its_tune_half_in_aggregate_only(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (root / "eval" / "dev" / "corpora.json").write_text(
        json.dumps([{"name": "acme-docs", "untouched": True}]), encoding="utf-8"
    )

    assert run_acme_exported(root, tmp_path) == 0

    assert "acme-docs · tune" in capsys.readouterr().out
    report = sets_report(root)
    assert "## acme-docs · tune" in report and "1 (1/0)" in report
    assert "o-1" not in report and "widget calibration" not in report


def test_an_unknown_corpus_name_is_a_usage_error(root: Path) -> None:
    assert main(["--root", str(root), "--only", "dev", "--corpus", "nope"]) == 2


def test_a_live_run_writes_its_report_under_var_and_leaves_the_tracked_one_alone(
    tmp_path: Path,
) -> None:
    shutil.copytree(REPO / GOLDEN, tmp_path / GOLDEN)
    tracked = tmp_path / GOLDEN / "reports" / "latest.md"
    before = tracked.read_bytes()
    cases_path = tmp_path / GOLDEN / "cases" / "golden-cases.json"
    cases = json.loads(cases_path.read_text(encoding="utf-8"))
    cases_path.write_text(json.dumps(cases[:3], ensure_ascii=False), encoding="utf-8")

    main(["--root", str(tmp_path), "--live"])

    assert tracked.read_bytes() == before
    assert "# Tuning set (golden cases)" in (
        tmp_path / "var" / "eval" / "latest-live.md"
    ).read_text(encoding="utf-8")


def test_the_cases_are_found_from_any_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)

    assert find_root(None) == REPO
    assert find_root(tmp_path / "elsewhere") == tmp_path / "elsewhere"


def test_a_writer_runs_only_the_case_files_it_wrote(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    later = [
        dev_case("t2-kafka", "kafka consumer lag", ["kafka/kafka-consumer-lag.md"], "tune", "short")
    ]
    cases = root / "eval" / "dev" / "cases"
    (cases / "bundled.later.json").write_text(json.dumps(later), encoding="utf-8")

    assert main(["--root", str(root), "--only", "dev", "--writer", "later"]) == 0

    out = capsys.readouterr().out
    assert "bundled · tune" in out and "1 (1/0)" in out and "acme-docs" not in out
    report = sets_report(root)
    assert "t2-kafka" in report and "t-redis" not in report


def test_each_half_is_broken_down_by_writer_when_several_wrote_it(root: Path) -> None:
    assert main(["--root", str(root), "--only", "dev", "--split", "all"]) == 0
    assert "| writer |" not in sets_report(root)  # one writer alone is no breakdown

    later = [
        dev_case(
            "t2-kafka", "kafka consumer lag", ["kafka/kafka-consumer-lag.md"], "tune", "short"
        ),
        dev_case(
            "t2-dns", "nxdomain for the payments api", ["redis/redis-memory.md"], "tune", "short"
        ),
        dev_case("h2-bread", "how to bake sourdough bread", [], "holdout", "negative-off-topic"),
    ]
    cases = root / "eval" / "dev" / "cases"
    (cases / "bundled.later.json").write_text(json.dumps(later), encoding="utf-8")

    assert main(["--root", str(root), "--only", "dev", "--split", "all"]) == 0

    report = sets_report(root)
    tune = report.split("## bundled · tune")[1].split("## ")[0]
    holdout = report.split("## bundled · holdout")[1].split("## ")[0]
    # Writer rows: cases, Hit@1 (`later` found Kafka's page, not DNS under a wrong judgment).
    assert "| later | 2 | 0.500 |" in tune and "| test | 2 | 1.000 |" in tune
    assert "| later | 1 | - |" in holdout and "| test | 1 | 1.000 |" in holdout


def test_a_writer_with_no_case_file_is_a_usage_error(root: Path) -> None:
    assert main(["--root", str(root), "--only", "dev", "--writer", "nobody"]) == 2


def test_ids_are_checked_across_files_a_writer_leaves_out(root: Path) -> None:
    clash = [dev_case("t-redis", "redis again", ["redis/redis-memory.md"], "tune", "short")]
    cases = root / "eval" / "dev" / "cases"
    (cases / "bundled.later.json").write_text(json.dumps(clash), encoding="utf-8")

    assert main(["--root", str(root), "--only", "dev", "--writer", "test"]) == 2
