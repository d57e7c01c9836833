"""`lookup-knowledge pyrag explain`: a query's reading, its documents and what decided."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from lookup_knowledge import cli, preflight
from lookup_knowledge.engine import scoring


@pytest.fixture(autouse=True)
def _data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Explain keeps the index it builds under DATA_DIR: the test's own folder."""
    monkeypatch.setenv("DATA_DIR", str(tmp_path / "state"))
    monkeypatch.delenv("PYRAG_INDEX_CACHE", raising=False)


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert cli.main(["pyrag", "explain", *argv]) == 0
    return capsys.readouterr().out


def test_a_query_is_explained_with_its_reading_and_documents(
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = _run(capsys, "redis memory high", "--top", "2", "--json")

    explained = json.loads(out)
    assert explained["concepts"][0] == "redi:known"
    assert explained["answer"].startswith("PRECISE ")
    assert explained["documents"][0]["source"] == "redis/redis-memory.md"
    assert len(explained["documents"]) == 2
    assert set(scoring.FEATURES) <= explained["documents"][0].keys()


def test_no_evidence_says_why(capsys: pytest.CaptureFixture[str]) -> None:
    error, nonsense, start = _run(capsys, "Error.", "qwzx plorf", "where do I start?").split(
        "\n== "
    )
    filtered = _run(capsys, "Error.", "--filter", "category=gateway")

    assert "answer: no_evidence (no_candidates): its one subject word, 'error', is on 16 " in error
    assert "and in the titles of 0" in error
    assert "no word of it that the corpus holds names a subject" in nonsense
    assert "'start', is on 11 of the 20 pages searched" in start
    # Among the few pages a filter leaves, the same word is a question about them.
    assert "answer: REFERENCE" in filtered and "gateway/" in filtered


def test_a_set_up_question_is_noted_capped_or_not(
    capsys: pytest.CaptureFixture[str], write_docs: Callable[[dict[str, str]], Path]
) -> None:
    docs = write_docs(
        {
            "retention.md": (
                "# TSDB compactions failing\n\nPrometheus keeps its data for the retention "
                "time of its storage flag; the TSDB compacts old blocks.\n"
            ),
            "disk.md": "# Disk full\n\nThe disk is full: no space left on device.\n",
        }
    )
    asked = "how do I change the prometheus storage retention time of the TSDB data"

    capped = _run(capsys, asked, "--docs", str(docs))
    kept = _run(capsys, "how to tune nginx proxy buffers")

    assert "answer: REFERENCE 0.7499" in capped and "first document's is not: capped" in capped
    assert "answer: PRECISE" in kept and "first document's is: graded as ever" in kept


def test_bad_arguments_are_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert cli.main(["pyrag", "explain", "x", "--docs", str(tmp_path / "none")]) == (
        preflight.EXIT_CONFIGURATION
    )
    assert "no folder of documents" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["pyrag", "explain", "x", "--filter", "nope"])


def test_explain_reads_the_index_serve_stores(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lookup_knowledge.engine import index_store

    first = _run(capsys, "redis memory high", "--json")
    assert index_store.is_current(None, tmp_path / "state" / "engine-index")
    builds: list[object] = []
    monkeypatch.setattr(index_store, "build", lambda *a: builds.append(a))
    assert _run(capsys, "redis memory high", "--json") == first
    assert builds == []  # read back, not built


def test_explain_builds_without_a_store_when_the_settings_do_not_load(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYRAG_INDEX_CACHE", "sometimes")
    assert json.loads(_run(capsys, "redis memory high", "--json"))["answer"].startswith("PRECISE")
    assert not (tmp_path / "state").exists()
