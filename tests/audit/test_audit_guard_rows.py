"""Report verifications in the audit: one `guard_verification` row each, through the same spool.

See docs/audit.md#guard-verifications. The same suite runs on a SQLite file and on the real
MariaDB; "unreachable" is a MySQL URL on a port nothing listens on.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine

from audit_support import (
    BACKENDS,
    UNREACHABLE_MYSQL_URL,
    all_rows,
    database,
    make_record,
    reader,
    spool_depth,
)
from lookup_knowledge.audit import schema
from lookup_knowledge.audit import sql as audit_sql
from lookup_knowledge.audit.cli import main as audit_main
from lookup_knowledge.audit.lines import decode_record, encode_record
from lookup_knowledge.audit.writer import AuditWriter
from lookup_knowledge.domain.guard import GuardOutcome, GuardViolationRef

FAST_RETRY = {"retry_initial_s": 0.05, "retry_max_s": 0.2}
_BASE_TIME = datetime(2026, 11, 30, 11, 0, 0, 250000, tzinfo=UTC)


@pytest.fixture(params=BACKENDS)
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    with database(request.param, tmp_path) as url:
        yield url


@pytest.fixture
def writers() -> Iterator[list[AuditWriter]]:
    opened: list[AuditWriter] = []
    yield opened
    for writer in opened:
        writer.close(timeout=10)


def start(writers: list[AuditWriter], url: str, spool_dir: Path) -> AuditWriter:
    writer = AuditWriter.open(url, spool_dir, **FAST_RETRY)
    writers.append(writer)
    writer.start()
    return writer


def outcome(n: int = 0, **overrides: Any) -> GuardOutcome:
    values: dict[str, Any] = {
        "run_id": "run-42",
        "outcome": "violations",
        "violations": (
            GuardViolationRef("DOCUMENT_NOT_IN_RESULT", "$.analyses[0].citations[0].document_id"),
            GuardViolationRef("QUOTE_NOT_IN_EXCERPT", "$.analyses[1].citations[0].quote"),
            GuardViolationRef("DOCUMENT_NOT_IN_RESULT", "$.analyses[2].citations[0].document_id"),
        ),
        "analysis_count": 3,
        "citation_count": 4,
        "tool_call_count": 2,
        "ledger_entry_count": 2,
        "snapshot_count": 1,
        "report_sha256": "ab" * 32,
        "duration_ms": 1.234,
        "created_at": _BASE_TIME + timedelta(milliseconds=n),
    }
    values.update(overrides)
    return GuardOutcome(**values)


def verification_rows(engine: Engine) -> list[dict[str, Any]]:
    with engine.connect() as conn:
        query = schema.guard_verification.select().order_by(schema.guard_verification.c.id)
        return [dict(row._mapping) for row in conn.execute(query)]


def test_a_verification_is_one_spool_line_that_reads_back_equal() -> None:
    original = outcome()

    line = encode_record(original)

    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert decode_record(line) == original


def test_a_lookup_line_without_a_table_key_still_reads_as_a_lookup() -> None:
    """Spools written before verifications were audited hold lookup lines only."""
    record = make_record(3)

    assert b'"table"' not in encode_record(record)
    assert decode_record(encode_record(record)) == record


def test_verifications_and_lookups_each_reach_their_own_table_once(
    writers: list[AuditWriter], url: str, tmp_path: Path
) -> None:
    writer = start(writers, url, tmp_path / "spool")
    lookups = [make_record(n) for n in range(5)]
    verifications = [
        outcome(0),
        outcome(1, outcome="ok", violations=(), snapshot_count=4),
        outcome(2, outcome="LEDGER_UNAVAILABLE", violations=(), ledger_entry_count=0),
    ]

    for row in [lookups[0], verifications[0], *lookups[1:4], *verifications[1:], lookups[4]]:
        writer.submit(row)
    assert writer.flush(timeout=30)

    with reader(url) as db:
        calls = all_rows(db)
        rows = verification_rows(db)
    assert [r["invocation_id"] for r in calls] == [r.invocation_id for r in lookups]
    assert [r["invocation_id"] for r in rows] == [v.invocation_id for v in verifications]
    first, passed, stopped = rows
    assert first["run_id"] == "run-42"
    assert (first["outcome"], first["ok"], first["error_code"]) == ("violations", False, None)
    assert first["violation_count"] == 3
    assert first["violation_codes"] == "DOCUMENT_NOT_IN_RESULT,QUOTE_NOT_IN_EXCERPT"
    assert first["violations"][1] == {
        "code": "QUOTE_NOT_IN_EXCERPT",
        "path": "$.analyses[1].citations[0].quote",
    }
    assert (first["citation_count"], first["tool_call_count"]) == (4, 2)
    assert (first["ledger_entry_count"], first["snapshot_count"]) == (2, 1)
    assert first["report_sha256"] == "ab" * 32
    assert first["duration_ms"] == pytest.approx(1.234)
    assert first["created_at"] == audit_sql.db_timestamp(verifications[0].created_at)
    assert (passed["ok"], passed["violation_count"], passed["violations"]) == (True, 0, None)
    assert (stopped["ok"], stopped["error_code"]) == (False, "LEDGER_UNAVAILABLE")


def test_a_verification_spooled_while_the_database_is_down_is_written_once_after_restart(
    writers: list[AuditWriter], url: str, tmp_path: Path
) -> None:
    spool_dir = tmp_path / "spool"
    waiting = [outcome(n) for n in range(3)] + [make_record(9)]
    down = start(writers, UNREACHABLE_MYSQL_URL, spool_dir)
    for row in waiting:
        down.submit(row)
    down.close()
    assert spool_depth(spool_dir) == 4

    writer = start(writers, url, spool_dir)
    assert writer.flush(timeout=30)
    writer.submit(waiting[0])  # the same verification offered again: skipped, not doubled
    assert writer.flush(timeout=30)

    with reader(url) as db:
        assert [r["invocation_id"] for r in verification_rows(db)] == [
            v.invocation_id for v in waiting[:3]
        ]
        assert len(all_rows(db)) == 1
    assert spool_depth(spool_dir) == 0


def test_audit_show_lists_a_runs_verifications_after_its_calls(
    writers: list[AuditWriter], url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    writer = start(writers, url, tmp_path / "spool")
    writer.submit(make_record(1))
    writer.submit(outcome(2))
    assert writer.flush(timeout=30)

    code = audit_main(["show", "run-42", "--database-url", url])

    text = capsys.readouterr().out
    assert code == 0
    assert "call_1" in text
    assert "1 report verification(s)" in text
    assert "violations  3 violation(s) (DOCUMENT_NOT_IN_RESULT,QUOTE_NOT_IN_EXCERPT)" in text
    assert "4 citation(s) across 2 call(s)" in text
