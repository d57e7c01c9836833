"""The audit writer: batches in a thread, spools while the database is away, loses nothing.

See docs/audit.md#durability.

The same suite runs on a SQLite file and on the real MariaDB. "Unreachable" is a MySQL URL on a
port nothing listens on; the outage of a live database is in test_audit_outage.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, text

from audit_support import (
    BACKENDS,
    UNREACHABLE_MYSQL_URL,
    all_rows,
    database,
    make_record,
    reader,
    stored_ids,
    wait_until,
)
from lookup_knowledge.adapters import audit_sql
from lookup_knowledge.adapters.audit_spool import REJECTED_FILE, SEGMENT_GLOB, AuditSpool
from lookup_knowledge.adapters.audit_writer import AuditWriter
from lookup_knowledge.domain.audit import AuditRecord

FAST_RETRY = {"retry_initial_s": 0.05, "retry_max_s": 0.2}


@pytest.fixture(params=BACKENDS)
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    with database(request.param, tmp_path) as url:
        yield url


@pytest.fixture
def db(url: str) -> Iterator[Engine]:
    with reader(url) as engine:
        yield engine


@pytest.fixture
def spool_dir(tmp_path: Path) -> Path:
    return tmp_path / "spool"


@pytest.fixture
def writers() -> Iterator[list[AuditWriter]]:
    """Writers a test opened; closed at the end even when the test fails."""
    opened: list[AuditWriter] = []
    yield opened
    for writer in opened:
        writer.close(timeout=10)


def start(writers: list[AuditWriter], url: str, spool_dir: Path, **options: float) -> AuditWriter:
    writer = AuditWriter.open(url, spool_dir, **{**FAST_RETRY, **options})  # type: ignore[arg-type]
    writers.append(writer)
    writer.start()
    return writer


def records(start: int, count: int, **overrides: object) -> list[AuditRecord]:
    return [make_record(n, **overrides) for n in range(start, start + count)]


def submit_all(writer: AuditWriter, batch: list[AuditRecord]) -> None:
    for record in batch:
        writer.submit(record)


def ids(batch: list[AuditRecord]) -> list[str]:
    return [r.invocation_id for r in batch]


def segments(spool_dir: Path) -> list[Path]:
    return sorted(spool_dir.glob(SEGMENT_GLOB))


def spool_everything(writers: list[AuditWriter], spool_dir: Path, batch: list[AuditRecord]) -> None:
    """Rows a writer could only spool (database down), then closed: what a restart finds."""
    down = start(writers, UNREACHABLE_MYSQL_URL, spool_dir)
    submit_all(down, batch)
    wait_until(lambda: down.pending() == 0)
    down.close()
    assert down.spool_depth() == len(batch)


# --- writing ---


def test_submitted_rows_arrive_once_each_in_submission_order(
    writers: list[AuditWriter], url: str, spool_dir: Path, db: Engine
) -> None:
    writer = start(writers, url, spool_dir, batch_size=50)
    batch = records(0, 500)

    submit_all(writer, batch)

    assert writer.flush(timeout=30)
    assert stored_ids(db) == ids(batch)
    assert segments(spool_dir) == []


def test_the_writer_creates_the_schema_itself(
    writers: list[AuditWriter], url: str, spool_dir: Path, db: Engine
) -> None:
    writer = start(writers, url, spool_dir)
    writer.submit(make_record(1))

    assert writer.flush(timeout=20)
    assert [r["tool_call_id"] for r in all_rows(db)] == ["call_1"]


def test_a_clean_close_writes_everything_still_queued(
    writers: list[AuditWriter], url: str, spool_dir: Path, db: Engine
) -> None:
    writer = start(writers, url, spool_dir)
    batch = records(0, 300)
    submit_all(writer, batch)

    writer.close(timeout=30)

    assert stored_ids(db) == ids(batch)
    assert writer.spool_depth() == 0


async def test_ping_answers_when_the_database_is_there(
    writers: list[AuditWriter], url: str, spool_dir: Path
) -> None:
    writer = start(writers, url, spool_dir)

    await writer.ping()


async def test_ping_raises_when_the_database_is_unreachable(
    writers: list[AuditWriter], spool_dir: Path
) -> None:
    writer = start(writers, UNREACHABLE_MYSQL_URL, spool_dir)

    with pytest.raises(Exception, match="Can't connect"):
        await writer.ping()


# --- spooling ---


def test_submit_returns_at_once_while_the_database_is_unreachable(
    writers: list[AuditWriter], spool_dir: Path
) -> None:
    writer = start(writers, UNREACHABLE_MYSQL_URL, spool_dir)
    slowest = 0.0
    for record in records(0, 300):
        began = time.perf_counter()
        writer.submit(record)
        slowest = max(slowest, time.perf_counter() - began)

    assert slowest < 0.05
    wait_until(lambda: writer.spool_depth() == 300)


def test_unreachable_database_rows_wait_in_the_spool_with_a_warning(
    writers: list[AuditWriter], spool_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="lookup_knowledge.adapters.audit_writer")
    writer = start(writers, UNREACHABLE_MYSQL_URL, spool_dir)

    submit_all(writer, records(0, 20))
    wait_until(lambda: writer.pending() == 0)

    assert writer.spool_depth() == 20
    assert writer.spooling
    lines = [
        json.loads(line) for seg in segments(spool_dir) for line in seg.read_bytes().splitlines()
    ]
    assert [line["tool_call_id"] for line in lines] == [f"call_{n}" for n in range(20)]
    assert any("spooling rows to" in r.getMessage() for r in caplog.records)
    wait_until(lambda: any("still unreachable" in r.getMessage() for r in caplog.records))


def test_the_spool_survives_a_restart_and_is_written_exactly_once_in_order(
    writers: list[AuditWriter],
    url: str,
    spool_dir: Path,
    db: Engine,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="lookup_knowledge.adapters.audit_writer")
    spooled = records(0, 120)
    spool_everything(writers, spool_dir, spooled)

    writer = start(writers, url, spool_dir, batch_size=50)
    assert writer.flush(timeout=30)
    writer.close()
    start(writers, url, spool_dir).close()  # a further restart finds nothing to replay

    assert stored_ids(db) == ids(spooled)
    assert segments(spool_dir) == []
    assert any("120 spooled rows written" in r.getMessage() for r in caplog.records)


def test_rows_submitted_after_a_restart_are_written_after_the_spooled_ones(
    writers: list[AuditWriter], url: str, spool_dir: Path, db: Engine
) -> None:
    spooled, fresh = records(0, 60), records(60, 60)
    spool_everything(writers, spool_dir, spooled)

    writer = start(writers, url, spool_dir, batch_size=7)
    submit_all(writer, fresh)

    assert writer.flush(timeout=30)
    assert stored_ids(db) == ids(spooled) + ids(fresh)


def test_a_replay_cut_short_writes_no_row_twice(
    writers: list[AuditWriter], url: str, spool_dir: Path, db: Engine
) -> None:
    spooled = records(0, 40)
    spool_everything(writers, spool_dir, spooled)
    # As if a replay had inserted the first half and died before deleting the segment.
    audit_sql.ensure_schema(db)
    audit_sql.insert_records(db, spooled[:20])

    writer = start(writers, url, spool_dir)

    assert writer.flush(timeout=30)
    assert stored_ids(db) == ids(spooled)


def test_rows_spooled_by_a_killed_process_are_written_by_the_next_one(
    writers: list[AuditWriter], url: str, spool_dir: Path, db: Engine
) -> None:
    child = textwrap.dedent(f"""
        import os, signal, sys, time
        from pathlib import Path
        from lookup_knowledge.adapters.audit_writer import AuditWriter
        from lookup_knowledge.domain.audit import AuditRecord
        writer = AuditWriter.open({UNREACHABLE_MYSQL_URL!r}, Path(sys.argv[1]))
        writer.start()
        for n in range(50):
            writer.submit(AuditRecord(run_id="run-k", tool_call_id=f"call_{{n}}", query="q",
                                      success=True, invocation_id=f"killed-{{n:03d}}"))
        while writer.spool_depth() < 50:
            time.sleep(0.01)
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    done = subprocess.run([sys.executable, "-c", child, str(spool_dir)], timeout=60, check=False)
    assert done.returncode == -signal.SIGKILL

    assert AuditSpool(spool_dir).depth() == 50
    writer = start(writers, url, spool_dir)

    assert writer.flush(timeout=30)
    assert stored_ids(db) == [f"killed-{n:03d}" for n in range(50)]


def test_a_torn_last_line_is_kept_aside_and_the_rest_is_written(
    writers: list[AuditWriter], url: str, spool_dir: Path, db: Engine
) -> None:
    spooled = records(0, 5)
    spool_everything(writers, spool_dir, spooled)
    [segment] = segments(spool_dir)
    with segment.open("ab") as handle:
        handle.write(b'{"run_id": "run-42", "tool_ca')

    writer = start(writers, url, spool_dir)

    assert writer.flush(timeout=30)
    assert stored_ids(db) == ids(spooled)
    assert (spool_dir / "corrupt.jsonl").read_bytes() == b'{"run_id": "run-42", "tool_ca\n'


def test_a_row_the_database_refuses_is_kept_aside_and_the_others_are_written(
    writers: list[AuditWriter], url: str, spool_dir: Path, db: Engine
) -> None:
    audit_sql.ensure_schema(db)
    with db.begin() as conn:
        if db.dialect.name == "sqlite":
            conn.execute(
                text(
                    "CREATE TRIGGER refuse_poison BEFORE INSERT ON tool_invocation "
                    "WHEN NEW.query = 'poison' BEGIN SELECT RAISE(ABORT, 'poison row'); END"
                )
            )
        else:
            conn.execute(
                text(
                    "CREATE TRIGGER refuse_poison BEFORE INSERT ON tool_invocation FOR EACH ROW "
                    "IF NEW.query = 'poison' THEN "
                    "SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'poison row'; END IF"
                )
            )
    batch = [*records(0, 3), make_record(3, query="poison"), *records(4, 3)]
    writer = start(writers, url, spool_dir)

    submit_all(writer, batch)

    assert writer.flush(timeout=30)
    assert stored_ids(db) == ids(batch[:3] + batch[4:])
    [rejected] = [json.loads(line) for line in (spool_dir / REJECTED_FILE).read_text().splitlines()]
    assert rejected["record"]["invocation_id"] == batch[3].invocation_id
    assert "poison row" in rejected["reason"]
    assert not writer.spooling


def test_a_row_submitted_after_close_is_spooled_for_the_next_start(
    writers: list[AuditWriter], url: str, spool_dir: Path, db: Engine
) -> None:
    first = start(writers, url, spool_dir)
    first.close()
    late = make_record(1)

    first.submit(late)  # never raises

    assert first.spool_depth() == 1
    assert start(writers, url, spool_dir).flush(timeout=30)
    assert stored_ids(db) == [late.invocation_id]


def test_submit_never_raises_even_for_a_malformed_record(
    writers: list[AuditWriter], url: str, spool_dir: Path, db: Engine
) -> None:
    writer = start(writers, url, spool_dir)
    bad = AuditRecord(run_id=None, tool_call_id="call_bad", query="q", success=True)  # type: ignore[arg-type]

    writer.submit(bad)
    writer.submit(make_record(2))

    assert writer.flush(timeout=30)
    assert [r["tool_call_id"] for r in all_rows(db)] == ["call_2"]
    assert (spool_dir / REJECTED_FILE).exists()


def test_a_writer_sharing_the_spool_directory_leaves_the_others_segment_alone(
    writers: list[AuditWriter], url: str, spool_dir: Path, db: Engine
) -> None:
    # Two worker processes, one spool directory: a live writer's growing segment is its own.
    down = start(writers, UNREACHABLE_MYSQL_URL, spool_dir, retry_initial_s=60, retry_max_s=60)
    submit_all(down, records(0, 10))
    wait_until(lambda: down.spool_depth() == 10)

    other = start(writers, url, spool_dir)
    other.submit(make_record(10))
    assert other.flush(timeout=30)

    assert [r["tool_call_id"] for r in all_rows(db)] == ["call_10"]
    assert len(segments(spool_dir)) == 1
    down.close()
    assert start(writers, url, spool_dir).flush(timeout=30)
    assert len(all_rows(db)) == 11


def test_spool_files_are_private_to_the_service_user(
    writers: list[AuditWriter], spool_dir: Path
) -> None:
    writer = start(writers, UNREACHABLE_MYSQL_URL, spool_dir)
    writer.submit(make_record(1))
    wait_until(lambda: writer.spool_depth() == 1)

    [segment] = segments(spool_dir)
    assert os.stat(segment).st_mode & 0o077 == 0
