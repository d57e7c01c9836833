"""The audit writer: every row in the spool first, batches to the database, none lost.

See docs/audit.md#durability. The same suite runs on a SQLite file and on the real MariaDB.
"Unreachable" is a MySQL URL on a port nothing listens on; a live database that goes away or
hangs is in test_audit_writer_outage, a killed service process in tests/e2e.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, event

from audit_support import (
    BACKENDS,
    UNREACHABLE_MYSQL_URL,
    all_rows,
    database,
    make_record,
    reader,
    refuse_poison,
    spool_depth,
    stored_ids,
    wait_until,
)
from lookup_knowledge.audit import schema
from lookup_knowledge.audit import sql as audit_sql
from lookup_knowledge.audit.quarantine import QUARANTINE_FILE, read_entries
from lookup_knowledge.audit.segments import SEGMENT_GLOB
from lookup_knowledge.audit.spool import CORRUPT_FILE
from lookup_knowledge.audit.writer import AuditWriter
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
    writer = AuditWriter.open(url, spool_dir, **{**FAST_RETRY, **options})
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


def segment_lines(spool_dir: Path) -> list[dict[str, object]]:
    return [
        json.loads(line)
        for segment in sorted(spool_dir.glob(SEGMENT_GLOB))
        for line in segment.read_bytes().splitlines()
    ]


def spool_everything(writers: list[AuditWriter], spool_dir: Path, batch: list[AuditRecord]) -> None:
    """Rows a writer could only spool (database down), then closed: what a restart finds."""
    down = start(writers, UNREACHABLE_MYSQL_URL, spool_dir)
    submit_all(down, batch)
    down.close()
    assert spool_depth(spool_dir) == len(batch)


# --- writing ---


def test_submitted_rows_arrive_once_each_in_submission_order(
    writers: list[AuditWriter], url: str, spool_dir: Path, db: Engine
) -> None:
    writer = start(writers, url, spool_dir, batch_rows=50)
    batch = records(0, 500)

    submit_all(writer, batch)

    assert writer.flush(timeout=30)
    assert stored_ids(db) == ids(batch)


def test_the_writer_creates_the_schema_itself(
    writers: list[AuditWriter], url: str, spool_dir: Path, db: Engine
) -> None:
    writer = start(writers, url, spool_dir)
    writer.submit(make_record(1))

    assert writer.flush(timeout=20)
    assert [r["tool_call_id"] for r in all_rows(db)] == ["call_1"]


def test_a_batch_is_one_commit_not_one_per_row(
    writers: list[AuditWriter], url: str, spool_dir: Path, db: Engine
) -> None:
    writer = AuditWriter.open(url, spool_dir, **FAST_RETRY)
    writers.append(writer)
    commits: list[int] = []
    event.listen(writer.engine, "commit", lambda conn: commits.append(1))
    writer.start()
    batch = records(0, 400)

    submit_all(writer, batch)

    assert writer.flush(timeout=30)
    assert stored_ids(db) == ids(batch)
    # The schema check commits too; rows arrive in a handful of batches, not 400 commits.
    assert len(commits) <= 20
    assert writer.snapshot().rows_written == 400


def test_a_clean_close_writes_everything_still_waiting(
    writers: list[AuditWriter], url: str, spool_dir: Path, db: Engine
) -> None:
    writer = start(writers, url, spool_dir)
    batch = records(0, 300)
    submit_all(writer, batch)

    writer.close(timeout=30)

    assert stored_ids(db) == ids(batch)
    assert spool_depth(spool_dir) == 0
    assert list(spool_dir.glob(SEGMENT_GLOB)) == []


async def test_status_is_up_once_the_database_is_reached(
    writers: list[AuditWriter], url: str, spool_dir: Path
) -> None:
    writer = start(writers, url, spool_dir)

    status = await writer.status()

    assert (status.status, status.spool_depth, status.writer_stuck) == ("up", 0, False)


async def test_a_database_never_reached_since_start_is_down_with_the_reason(
    writers: list[AuditWriter], spool_dir: Path
) -> None:
    writer = start(writers, UNREACHABLE_MYSQL_URL, spool_dir)
    writer.submit(make_record(1))

    status = await writer.status()

    assert status.status == "down"
    assert status.error is not None and "not reached since start" in status.error
    assert "Can't connect" in status.error
    assert status.spool_depth == 1


# --- the spool ---


def test_submit_puts_the_row_in_the_spool_file_before_returning(
    writers: list[AuditWriter], spool_dir: Path
) -> None:
    writer = start(writers, UNREACHABLE_MYSQL_URL, spool_dir, retry_initial_s=60)
    batch = records(0, 20)

    submit_all(writer, batch)

    assert [line["invocation_id"] for line in segment_lines(spool_dir)] == ids(batch)
    assert writer.depth() == 20


def test_rows_wait_in_the_spool_while_the_database_is_unreachable_with_a_warning(
    writers: list[AuditWriter], spool_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="lookup_knowledge.audit.writer")
    writer = start(writers, UNREACHABLE_MYSQL_URL, spool_dir)

    submit_all(writer, records(0, 20))

    wait_until(lambda: any("unavailable" in r.getMessage() for r in caplog.records))
    assert writer.depth() == 20
    assert [line["tool_call_id"] for line in segment_lines(spool_dir)] == [
        f"call_{n}" for n in range(20)
    ]


def test_the_spool_survives_a_restart_and_is_written_exactly_once_in_order(
    writers: list[AuditWriter], url: str, spool_dir: Path, db: Engine
) -> None:
    spooled = records(0, 120)
    spool_everything(writers, spool_dir, spooled)

    writer = start(writers, url, spool_dir, batch_rows=50)
    assert writer.flush(timeout=30)
    writer.close()
    start(writers, url, spool_dir).close()  # a further restart finds nothing to replay

    assert stored_ids(db) == ids(spooled)
    assert list(spool_dir.glob(SEGMENT_GLOB)) == []


def test_rows_submitted_after_a_restart_are_written_after_the_spooled_ones(
    writers: list[AuditWriter], url: str, spool_dir: Path, db: Engine
) -> None:
    spooled, fresh = records(0, 60), records(60, 60)
    spool_everything(writers, spool_dir, spooled)

    writer = start(writers, url, spool_dir, batch_rows=7)
    submit_all(writer, fresh)

    assert writer.flush(timeout=30)
    assert stored_ids(db) == ids(spooled) + ids(fresh)


def test_a_replay_cut_short_writes_no_row_twice(
    writers: list[AuditWriter], url: str, spool_dir: Path, db: Engine
) -> None:
    spooled = records(0, 40)
    spool_everything(writers, spool_dir, spooled)
    # As if a replay had inserted the first half and died before deleting the segment.
    schema.ensure_schema(db)
    audit_sql.insert_records(db, spooled[:20])

    writer = start(writers, url, spool_dir)

    assert writer.flush(timeout=30)
    assert stored_ids(db) == ids(spooled)


@pytest.mark.parametrize("database_up", [True, False], ids=["database-up", "database-down"])
def test_a_process_killed_right_after_submitting_loses_no_row(
    url: str, spool_dir: Path, db: Engine, writers: list[AuditWriter], database_up: bool
) -> None:
    child = textwrap.dedent("""
        import os, signal, sys
        from pathlib import Path
        from lookup_knowledge.audit.writer import AuditWriter
        from lookup_knowledge.domain.audit import AuditRecord
        writer = AuditWriter.open(sys.argv[1], Path(sys.argv[2]))
        writer.start()
        for n in range(200):
            writer.submit(AuditRecord(run_id="run-k", tool_call_id=f"call_{n}", query="q",
                                      success=True, invocation_id=f"killed-{n:03d}"))
        os.kill(os.getpid(), signal.SIGKILL)  # no close, no flush: the rows are in the spool
    """)
    target = url if database_up else UNREACHABLE_MYSQL_URL
    done = subprocess.run(
        [sys.executable, "-c", child, target, str(spool_dir)], timeout=60, check=False
    )
    assert done.returncode == -signal.SIGKILL

    writer = start(writers, url, spool_dir)

    assert writer.flush(timeout=30)
    assert stored_ids(db) == [f"killed-{n:03d}" for n in range(200)]


def test_a_torn_last_line_is_kept_aside_and_the_rest_is_written(
    writers: list[AuditWriter], url: str, spool_dir: Path, db: Engine
) -> None:
    spooled = records(0, 5)
    spool_everything(writers, spool_dir, spooled)
    [segment] = spool_dir.glob(SEGMENT_GLOB)
    with segment.open("ab") as handle:
        handle.write(b'{"run_id": "run-42", "tool_ca')

    writer = start(writers, url, spool_dir)

    assert writer.flush(timeout=30)
    assert stored_ids(db) == ids(spooled)
    assert (spool_dir / CORRUPT_FILE).read_bytes() == b'{"run_id": "run-42", "tool_ca\n'


def test_a_row_submitted_after_close_is_spooled_for_the_next_start(
    writers: list[AuditWriter], url: str, spool_dir: Path, db: Engine
) -> None:
    first = start(writers, url, spool_dir)
    first.close()
    late = make_record(1)

    first.submit(late)  # never raises

    assert start(writers, url, spool_dir).flush(timeout=30)
    assert stored_ids(db) == [late.invocation_id]


def test_a_writer_sharing_the_spool_directory_leaves_the_others_segment_alone(
    writers: list[AuditWriter], url: str, spool_dir: Path, db: Engine
) -> None:
    # Two worker processes, one spool directory: a live writer's growing segment is its own.
    down = start(writers, UNREACHABLE_MYSQL_URL, spool_dir, retry_initial_s=60, retry_max_s=60)
    submit_all(down, records(0, 10))

    other = start(writers, url, spool_dir)
    other.submit(make_record(10))
    assert other.flush(timeout=30)

    assert [r["tool_call_id"] for r in all_rows(db)] == ["call_10"]
    assert down.depth() == 10
    down.close()
    assert start(writers, url, spool_dir).flush(timeout=30)
    assert len(all_rows(db)) == 11


def test_spool_files_are_private_to_the_service_user(
    writers: list[AuditWriter], spool_dir: Path
) -> None:
    writer = start(writers, UNREACHABLE_MYSQL_URL, spool_dir)
    writer.submit(make_record(1))

    assert [os.stat(s).st_mode & 0o077 for s in spool_dir.glob(SEGMENT_GLOB)] == [0]


# --- rows the database would refuse ---


async def test_a_refused_row_is_quarantined_and_its_batch_is_written_row_by_row(
    writers: list[AuditWriter], url: str, spool_dir: Path, db: Engine
) -> None:
    refuse_poison(db)
    batch = [*records(0, 40), make_record(40, query="poison"), *records(41, 40)]
    writer = start(writers, url, spool_dir)

    submit_all(writer, batch)

    assert writer.flush(timeout=30)
    assert stored_ids(db) == ids(batch[:40] + batch[41:])
    [entry] = read_entries(spool_dir / QUARANTINE_FILE)
    assert entry["invocation_id"] == batch[40].invocation_id
    assert entry["record"]["query"] == "poison"
    assert "poison row" in entry["reason"]
    status = await writer.status()
    assert (status.status, status.quarantine_size, status.rows_quarantined) == ("up", 1, 1)


def test_a_quarantined_row_replayed_after_a_crash_is_kept_once(
    writers: list[AuditWriter], url: str, spool_dir: Path, db: Engine
) -> None:
    refuse_poison(db)
    batch = [make_record(0), make_record(1, query="poison"), make_record(2)]
    spool_everything(writers, spool_dir, batch)
    # The segment is replayed twice, as after a crash between the quarantine and the ack.
    for copy in spool_dir.glob(SEGMENT_GLOB):
        (spool_dir / copy.name.replace("segment-", "segment-0")).write_bytes(copy.read_bytes())

    writer = start(writers, url, spool_dir)

    assert writer.flush(timeout=30)
    assert stored_ids(db) == ids([batch[0], batch[2]])
    assert [e["invocation_id"] for e in read_entries(spool_dir / QUARANTINE_FILE)] == [
        batch[1].invocation_id
    ]


def test_a_malformed_record_is_quarantined_never_raised(
    writers: list[AuditWriter], url: str, spool_dir: Path, db: Engine
) -> None:
    writer = start(writers, url, spool_dir)
    bad = AuditRecord(run_id=None, tool_call_id="call_bad", query="q", success=True)  # type: ignore[arg-type]

    writer.submit(bad)
    writer.submit(make_record(2))

    assert writer.flush(timeout=30)
    assert [r["tool_call_id"] for r in all_rows(db)] == ["call_2"]
    assert [e["invocation_id"] for e in read_entries(spool_dir / QUARANTINE_FILE)] == [
        bad.invocation_id
    ]


def nested(depth: int) -> dict[str, object]:
    value: dict[str, object] = {"leaf": True}
    for level in range(depth - 1):
        value = {f"level_{depth - 1 - level}": value}
    return value


def test_details_nested_40_deep_are_bounded_and_marked_not_refused(
    writers: list[AuditWriter], url: str, spool_dir: Path, db: Engine
) -> None:
    deep = make_record(1, retrieval_details={"retrieval_trace": nested(40), "evidence_refs": []})
    after = make_record(2)
    writer = start(writers, url, spool_dir)

    writer.submit(deep)
    writer.submit(after)

    assert writer.flush(timeout=30)
    assert stored_ids(db) == [deep.invocation_id, after.invocation_id]
    details = all_rows(db)[0]["retrieval_details"]
    assert details["details_truncated"] is True
    assert details["evidence_refs"] == []
    assert json.dumps(details).count("{") == 16  # the details object and 15 levels of trace
    assert not (spool_dir / QUARANTINE_FILE).exists()


def test_details_of_20_mb_are_bounded_to_the_setting_and_marked(
    writers: list[AuditWriter], url: str, spool_dir: Path, db: Engine
) -> None:
    big = make_record(1, retrieval_details={"retrieval_trace": {"blob": "x" * 20_000_000}})
    writer = start(writers, url, spool_dir, details_max_bytes=100_000)

    writer.submit(big)
    writer.submit(make_record(2))

    assert writer.flush(timeout=60)
    first, second = all_rows(db)
    assert first["retrieval_details"]["details_truncated"] is True
    assert len(json.dumps(first["retrieval_details"])) <= 100_000
    assert first["retrieval_details"]["retrieval_trace"]["blob"].endswith("…")
    assert second["tool_call_id"] == "call_2"


def test_lone_surrogates_in_every_text_are_stored_escaped(
    writers: list[AuditWriter], url: str, spool_dir: Path, db: Engine
) -> None:
    record = make_record(
        1,
        run_id="run-\ud800",
        query="a\ud800b",
        step_id="s\udfff",
        output_preview="p\ud83d",
        retrieval_details={"retrieval_trace": {"k\udc00": "v\ud800"}, "error": "\ud801"},
    )
    writer = start(writers, url, spool_dir)

    writer.submit(record)

    assert writer.flush(timeout=30)
    [row] = all_rows(db)
    assert (row["run_id"], row["query"], row["step_id"]) == ("run-\\ud800", "a\\ud800b", "s\\udfff")
    assert row["output_preview"] == "p\\ud83d"
    assert row["retrieval_details"]["retrieval_trace"] == {"k\\udc00": "v\\ud800"}


@pytest.mark.mysql
def test_a_row_that_breaks_the_connection_while_pings_succeed_is_quarantined_after_3_tries(
    writers: list[AuditWriter], spool_dir: Path, tmp_path: Path
) -> None:
    # With the bound lifted, a row over max_allowed_packet (16 MiB here) makes MariaDB drop the
    # connection (2006), which looks like an outage — but the database still answers pings.
    with database("mariadb", tmp_path) as url, reader(url) as db:
        huge = make_record(5, retrieval_details={"blob": "x" * 17_000_000})
        batch = [*records(0, 5), huge, *records(6, 5)]
        writer = start(writers, url, spool_dir, details_max_bytes=64 * 1024 * 1024)

        submit_all(writer, batch)

        assert writer.flush(timeout=60)
        assert stored_ids(db) == ids(batch[:5] + batch[6:])
        [entry] = read_entries(spool_dir / QUARANTINE_FILE)
        assert entry["invocation_id"] == huge.invocation_id
        assert "3 times, while the database answered pings" in entry["reason"]


@pytest.mark.mysql
async def test_an_unknown_database_at_runtime_is_misconfigured_not_an_outage(
    writers: list[AuditWriter], spool_dir: Path
) -> None:
    url = f"mysql+pymysql://root@127.0.0.1:3306/lk_test_audit_missing_{os.getpid()}"
    writer = start(writers, url, spool_dir)
    writer.submit(make_record(1))

    status = await writer.status()

    assert status.status == "down"
    assert status.error is not None and status.error.startswith("misconfigured: ")
    assert "Unknown database" in status.error
    assert status.spool_depth == 1  # the row waits in the spool; nothing is dropped
