"""eval/dev/explain.py: a tune case's reading and ranking, and where the positives are lost."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

from builders import dev_case

REPO = Path(__file__).resolve().parents[2]


def load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("explain", REPO / "eval" / "dev" / "explain.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def case(case_id: str, query: str, relevant: list[str], kind: str, split: str = "tune") -> dict:
    return dev_case(case_id, query, relevant, split, kind)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    cases = tmp_path / "eval" / "dev" / "cases"
    cases.mkdir(parents=True)
    redis = "redis memory usage high, keys evicted"
    bundled = [
        case("t-redis", redis, ["redis/redis-memory.md"], "short"),
        # Judged against a page that does not answer it: the right page ranks first elsewhere.
        case("t-wrong", redis, ["host/clock-skew.md"], "short"),
        case("t-bread", "how to bake sourdough bread", [], "negative-off-topic"),
        case("h-disk", "disk full, no space left", ["host/disk-full.zh.md"], "short", "holdout"),
    ]
    (cases / "bundled.t.json").write_text(json.dumps(bundled), encoding="utf-8")
    return tmp_path


def test_failures_are_explained_and_the_summary_sorts_the_losses(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert load_script().main(["bundled", "--root", str(root)]) == 0
    out = capsys.readouterr().out

    assert "== t-wrong [short]" in out  # a failure, with its reading and documents
    assert "concepts: redi:known" in out and "redis/redis-memory.md" in out
    assert "== t-redis" not in out and "== t-bread" not in out  # passing cases stay quiet
    assert "h-disk" not in out  # the holdout half is never read case by case
    assert out.rstrip().endswith(
        "bundled · tune: 2 positives — ok 1, cut 0, rank 0, miss 1, none 0; "
        "1 negatives — answered 0 (0 PRECISE)"
    )


def test_all_shows_the_passing_cases_and_marks_the_relevant_document(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert load_script().main(["bundled", "--root", str(root), "--all", "--top", "2"]) == 0
    out = capsys.readouterr().out
    block = out.split("== t-redis")[1].split("==")[0]
    assert "* " in block and block.count(" rank ") == 2


def acme_cases(root: Path) -> None:
    """One tune case over acme-docs, a corpus of one page `a.md`."""
    cases = root / "eval" / "dev" / "cases"
    cases.mkdir(parents=True)
    (cases / "acme-docs.t.json").write_text(
        json.dumps([case("a-1", "widget calibration", ["a.md"], "short")]), encoding="utf-8"
    )


def test_a_corpus_not_exported_here_says_how_to_export_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    acme_cases(tmp_path)
    assert load_script().main(["acme-docs", "--root", str(tmp_path)]) == 2
    assert "export_corpus.py acme-docs" in capsys.readouterr().out


def test_a_corpus_declared_untouched_is_not_read_case_by_case(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    acme_cases(tmp_path)
    corpora = tmp_path / "var" / "corpora" / "acme-docs"
    corpora.mkdir(parents=True)
    (corpora / "a.md").write_text("# Widgets\n\nwidget calibration steps\n", encoding="utf-8")
    declared = tmp_path / "eval" / "dev" / "corpora.json"

    declared.write_text(json.dumps([{"name": "acme-docs", "untouched": True}]))
    assert load_script().main(["acme-docs", "--root", str(tmp_path)]) == 2
    out = capsys.readouterr().out
    assert "untouched" in out and "a-1" not in out

    declared.write_text(json.dumps([{"name": "acme-docs"}]))
    assert load_script().main(["acme-docs", "--root", str(tmp_path), "--all"]) == 0
    assert "== a-1" in capsys.readouterr().out


def test_a_discourse_word_is_marked_in_the_reading() -> None:
    from lookup_knowledge.engine.query import Concept, Known

    describe = load_script().describe

    assert describe(Concept("issu", ("issu",), Known.KNOWN, discourse=True)) == "issu:known!"
    assert describe(Concept("redi", ("redi",), Known.KNOWN)) == "redi:known"
