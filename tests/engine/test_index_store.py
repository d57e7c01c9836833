"""A built index kept on disk between starts (engine/index_store.py).

docs/retrieval.md#stored-index.

What is read back must answer every query exactly as a fresh build does; a page, a lexicon
line or the engine changed must give a new build; a bad file is never trusted or fatal.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path

import pytest

from lookup_knowledge.cli import main as cli_main
from lookup_knowledge.cli import start_index_build
from lookup_knowledge.engine import index_store
from lookup_knowledge.engine.app import load_index
from lookup_knowledge.engine.corpus import read_sources
from lookup_knowledge.engine.index import KnowledgeIndex
from support import OpenClient, make_settings

# Every reading path: words, a typo, an identifier, Chinese, a log line, a filter, nonsense.
QUERIES = (
    "redis memory usage high",
    "redis memroy usage",
    "used_memory approaches maxmemory",
    "OOM command not allowed",
    "网关超时怎么办",
    "nginx upstream timed out 504",
    "kafka consumer lag growing",
    "2024-06-01T10:00:00Z ERROR consumer lag 12345 on partition 7",
    "qwzx plorf vindle",
)
BUNDLED_QUERIES = (
    "kafka consumer lag growing",
    "磁盘满了怎么办",
    "pod 一直重启 CrashLoopBackOff",
    "upstream sent too big header",
    "证书过期",
    "how to bake sourdough bread",
)


def _answers(index: KnowledgeIndex, queries: tuple[str, ...]) -> list[object]:
    found: list[object] = [index.search(q, top_k=5) for q in queries]
    found.append(index.search("memory", top_k=5, filters={"category": "redis"}))
    return found


def test_an_index_read_back_answers_as_a_fresh_build(small_kb: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    built = load_index(small_kb, store)
    assert index_store.store_path(store, small_kb).is_file()
    read = index_store.obtain(small_kb, store)
    assert read is not built
    fresh = load_index(small_kb)
    assert _answers(read, QUERIES) == _answers(fresh, QUERIES)
    assert read.chunk_count == fresh.chunk_count
    assert read.search("redis memory usage high", top_k=5).hits  # not an empty equality


def test_the_bundled_kb_read_back_answers_as_built(tmp_path: Path) -> None:
    load_index(None, tmp_path)
    path = index_store.store_path(tmp_path, None)
    assert path.name == "index-bundled.pickle"
    read = index_store.load(path, index_store.key(read_sources(None), None))
    assert read is not None
    assert _answers(read, BUNDLED_QUERIES) == _answers(load_index(None), BUNDLED_QUERIES)


def test_a_stored_index_is_read_not_built(
    small_kb: Path,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    load_index(small_kb, tmp_path)
    builds: list[object] = []
    original = index_store.build
    monkeypatch.setattr(index_store, "build", lambda *a: builds.append(a) or original(*a))
    with caplog.at_level(logging.INFO, logger="lookup_knowledge.engine.index_store"):
        load_index(small_kb, tmp_path)
    assert builds == []
    assert "index read from" in caplog.text


def _edited(small_kb: Path) -> None:
    page = small_kb / "streaming" / "kafka-lag.md"
    page.write_text(page.read_text() + "\n## Rebalancing\n\nA zanzibar storm of rebalances.\n")


def test_an_edited_page_gives_a_new_build(small_kb: Path, tmp_path: Path) -> None:
    load_index(small_kb, tmp_path)
    assert index_store.is_current(small_kb, tmp_path)
    _edited(small_kb)
    assert not index_store.is_current(small_kb, tmp_path)
    index = load_index(small_kb, tmp_path)
    assert (
        index.search("zanzibar rebalances", top_k=3).hits[0].chunk.source.endswith("kafka-lag.md")
    )
    assert index_store.is_current(small_kb, tmp_path)


def test_an_added_or_removed_page_gives_a_new_build(small_kb: Path, tmp_path: Path) -> None:
    load_index(small_kb, tmp_path)
    (small_kb / "extra.md").write_text("# Zanzibar\n\nZanzibar widgets overheat.\n")
    assert not index_store.is_current(small_kb, tmp_path)
    assert load_index(small_kb, tmp_path).search("zanzibar widgets", top_k=3).hits
    (small_kb / "extra.md").unlink()
    assert not index_store.is_current(small_kb, tmp_path)
    assert not load_index(small_kb, tmp_path).search("zanzibar widgets", top_k=3).hits


def test_a_changed_lexicon_file_gives_a_new_build(small_kb: Path, tmp_path: Path) -> None:
    load_index(small_kb, tmp_path)
    lexicon = small_kb / ".lexicon"
    lexicon.mkdir()
    (lexicon / "glossary.txt").write_text("backlog, lag\n")
    assert not index_store.is_current(small_kb, tmp_path)
    index = load_index(small_kb, tmp_path)
    assert index.lexicon.sources == (str(lexicon / "glossary.txt"),)
    assert index_store.is_current(small_kb, tmp_path)


def test_the_key_names_the_engine_and_its_packages(
    small_kb: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sources = read_sources(small_kb)
    before = index_store.key(sources, small_kb)
    assert index_store.key(sources, small_kb) == before
    files = list(index_store._engine_files())
    assert any(label == "index.py" for label, _ in files)
    assert any(label == "data/thesaurus.txt" for label, _ in files)
    assert not any(label.startswith("kb/") for label, _ in files)
    changed = [
        (label, data + b"#") if label == "index.py" else (label, data) for label, data in files
    ]
    monkeypatch.setattr(index_store, "_engine_files", lambda: iter(changed))
    assert index_store.key(sources, small_kb) != before
    monkeypatch.setattr(index_store, "_engine_files", lambda: iter(files))
    monkeypatch.setattr(index_store, "PACKAGES", (*index_store.PACKAGES, "pytest"))
    assert index_store.key(sources, small_kb) != before


def test_a_truncated_file_is_built_again_and_replaced(
    small_kb: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    load_index(small_kb, tmp_path)
    path = index_store.store_path(tmp_path, small_kb)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with caplog.at_level(logging.WARNING):
        index = load_index(small_kb, tmp_path)
    assert "unreadable" in caplog.text
    assert index.search("redis memory usage high", top_k=3).hits
    assert index_store.load(path, index_store.key(read_sources(small_kb), small_kb)) is not None


def test_a_file_others_may_write_is_never_read(
    small_kb: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    load_index(small_kb, tmp_path)
    path = index_store.store_path(tmp_path, small_kb)
    assert path.stat().st_mode & 0o077 == 0  # written private
    path.chmod(0o666)
    wanted = index_store.key(read_sources(small_kb), small_kb)
    with caplog.at_level(logging.WARNING):
        assert index_store.load(path, wanted) is None
    assert "writable by others" in caplog.text
    load_index(small_kb, tmp_path)  # built again, stored private
    assert path.stat().st_mode & 0o077 == 0
    assert index_store.load(path, wanted) is not None


def test_a_store_that_cannot_be_written_is_no_failure(
    small_kb: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    with caplog.at_level(logging.WARNING):
        index = load_index(small_kb, blocked / "store")
    assert index.search("redis memory usage high", top_k=3).hits
    assert "not stored" in caplog.text


def test_a_second_holder_waits_for_the_first(tmp_path: Path) -> None:
    path = index_store.store_path(tmp_path, None)
    first_in, let_go = threading.Event(), threading.Event()
    released = False
    seen: list[tuple[bool, bool]] = []

    def first() -> None:
        nonlocal released
        with index_store.held(path) as storing:
            assert storing
            first_in.set()
            let_go.wait(10)
            released = True

    def second() -> None:
        with index_store.held(path, wait_s=30) as storing:
            seen.append((released, storing))

    holder = threading.Thread(target=first)
    holder.start()
    assert first_in.wait(10)
    waiter = threading.Thread(target=second)
    waiter.start()
    time.sleep(0.2)  # the waiter is at the lock (a broken lock would let it in now)
    let_go.set()
    holder.join(10)
    waiter.join(10)
    assert seen == [(True, True)]


def test_a_holder_that_does_not_wait_stores_nothing(tmp_path: Path) -> None:
    path = index_store.store_path(tmp_path, None)
    with index_store.held(path) as first, index_store.held(path) as second:
        assert (first, second) == (True, False)
    with index_store.held(path) as again:
        assert again


def test_a_large_corpus_is_built_here_while_another_process_builds_it(
    small_kb: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pages over WAIT_BELOW_BYTES are built by a start that finds another build under way,
    which stores them; one under it waits for that build and reads it."""
    path = index_store.store_path(tmp_path, small_kb)
    monkeypatch.setattr(index_store, "WAIT_BELOW_BYTES", 0)
    with index_store.held(path):  # another process's build, under way
        index = index_store.obtain(small_kb, tmp_path)
    assert index.search("redis memory usage high", top_k=3).hits
    assert not path.exists()  # left to the holder to store

    monkeypatch.setattr(index_store, "WAIT_BELOW_BYTES", 10**9)
    monkeypatch.setattr(index_store, "LOCK_WAIT_S", 0.2)
    with index_store.held(path):  # a holder that never finishes: built after the wait
        index = index_store.obtain(small_kb, tmp_path)
    assert index.search("redis memory usage high", top_k=3).hits


def test_serve_builds_the_index_on_the_side_when_it_is_not_current(
    small_kb: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("lookup_knowledge.cli._usable_cores", lambda: 2)
    settings = make_settings(tmp_path, pyrag_base_url=None, pyrag_docs_dir=small_kb)
    build = start_index_build(settings)
    assert build is not None
    assert build.wait(timeout=120) == 0
    assert settings.index_store_dir is not None
    assert index_store.is_current(small_kb, settings.index_store_dir)
    assert start_index_build(settings) is None  # current: nothing to build


@pytest.mark.parametrize(
    "overrides",
    [
        {"pyrag_index_cache": False},  # the store is off
        {"pyrag_base_url": "http://pyrag.test:8090"},  # the engine is remote
    ],
)
def test_serve_builds_nothing_on_the_side_without_an_embedded_store(
    small_kb: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, overrides: dict[str, object]
) -> None:
    monkeypatch.setattr("lookup_knowledge.cli._usable_cores", lambda: 2)
    values: dict[str, object] = {"pyrag_base_url": None, "pyrag_docs_dir": small_kb, **overrides}
    assert start_index_build(make_settings(tmp_path, **values)) is None
    assert not (tmp_path / "engine-index").exists()


def test_serve_builds_nothing_on_the_side_on_one_core(
    small_kb: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("lookup_knowledge.cli._usable_cores", lambda: 1)
    settings = make_settings(tmp_path, pyrag_base_url=None, pyrag_docs_dir=small_kb)
    assert start_index_build(settings) is None


def test_pyrag_index_stores_the_index_for_the_next_start(
    small_kb: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DATA_DIR", str(tmp_path / "state"))
    monkeypatch.delenv("PYRAG_BASE_URL", raising=False)
    # `--docs` becomes PYRAG_DOCS_DIR, as in `pyrag serve`: set here so that it is undone.
    monkeypatch.setenv("PYRAG_DOCS_DIR", str(small_kb))
    assert cli_main(["pyrag", "index", "--docs", str(small_kb)]) == 0
    assert index_store.is_current(small_kb, tmp_path / "state" / "engine-index")
    monkeypatch.setenv("PYRAG_INDEX_CACHE", "false")
    assert cli_main(["pyrag", "index", "--docs", str(small_kb)]) == 2


def test_the_store_module_is_light_until_an_index_is_read() -> None:
    """`serve` asks whether the stored index is current before importing numpy or FastAPI."""
    import subprocess
    import sys

    probe = (
        "import sys; from lookup_knowledge.engine import index_store; "
        "print(sorted(m for m in ('numpy', 'fastapi', 'rjieba') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, env=os.environ
    )
    assert out.stdout.strip() == "[]"


async def test_the_service_keeps_its_engine_index_under_data_dir(
    open_client: OpenClient, small_kb: Path, tmp_path: Path
) -> None:
    body = {"run_id": "run-s", "tool_call_id": "call-1", "query": "redis memory usage high"}
    async with open_client(pyrag_base_url=None, pyrag_docs_dir=small_kb) as client:
        first = await client.post("/lookup_knowledge", json=body)
    assert first.status_code == 200
    assert index_store.is_current(small_kb, tmp_path / "engine-index")
    async with open_client(pyrag_base_url=None, pyrag_docs_dir=small_kb) as client:
        again = await client.post("/lookup_knowledge", json={**body, "tool_call_id": "call-2"})
    assert again.status_code == 200
    assert first.json()["evidence_status"] == "EVIDENCE_FOUND"
    assert again.json()["evidence"] == first.json()["evidence"]


def test_the_dictionary_is_read_back_not_parsed_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lookup_knowledge.engine import bilingual

    parsed = bilingual.parsed_in(tmp_path)
    assert (tmp_path / "dictionary.pickle").is_file()
    assert "quota" in parsed.uses
    assert parsed == bilingual.parsed_in(None)  # what parsing gives

    def no_parsing() -> None:
        raise AssertionError("parsed again")

    monkeypatch.setattr(bilingual, "_read_cedict", no_parsing)
    again = bilingual.parsed_in(tmp_path)
    assert again == parsed
    assert again.table["配额"] == parsed.table["配额"]
    assert again.stems == parsed.stems


def test_a_bad_dictionary_file_is_parsed_again_and_replaced(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from lookup_knowledge.engine import bilingual

    path = tmp_path / "dictionary.pickle"
    head = bilingual._HEAD + index_store.key((), None).encode() + b"\n"
    path.write_bytes(head + b"not a pickle")
    with caplog.at_level(logging.WARNING, logger="lookup_knowledge.engine.index_store"):
        parsed = bilingual.parsed_in(tmp_path)
    assert f"stored dictionary {path} unreadable" in caplog.text
    assert parsed.table
    assert index_store.read(path, head, "dictionary") == parsed


def test_the_service_keeps_the_dictionary_beside_its_index(small_kb: Path, tmp_path: Path) -> None:
    from lookup_knowledge.engine import bilingual

    before = bilingual._store
    try:
        load_index(small_kb, tmp_path)
        assert bilingual._store == tmp_path
    finally:
        bilingual.keep_in(before)


def test_serve_reads_the_pages_once_for_the_check_and_the_start(
    small_kb: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[object] = []
    original = index_store.read_sources
    monkeypatch.setattr(index_store, "read_sources", lambda d: calls.append(d) or original(d))
    assert not index_store.is_current(small_kb, tmp_path)  # not kept: read again
    assert not index_store.is_current(small_kb, tmp_path, keep=True)
    index_store.obtain(small_kb, tmp_path)
    assert calls == [small_kb, small_kb]
    index_store.obtain(small_kb, tmp_path)  # a later obtain reads them again
    assert calls == [small_kb, small_kb, small_kb]
