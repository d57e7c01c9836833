"""The `tool_invocation` table (docs/audit.md): schema creation and upgrade, what a row holds.

The same suite runs on a SQLite file and on the real MariaDB (see tests/audit_support.py).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import (
    Boolean,
    Column,
    DateTime,
    Engine,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    insert,
    inspect,
)

from audit_support import BACKENDS, all_rows, database, make_record, reader
from lookup_knowledge.audit import schema
from lookup_knowledge.audit import sql as audit_sql
from lookup_knowledge.domain.audit import OUTPUT_PREVIEW_CHARS, AuditRecord


@pytest.fixture(params=BACKENDS)
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    with database(request.param, tmp_path) as url, reader(url) as engine:
        yield engine


def columns(engine: Engine) -> set[str]:
    return {c["name"] for c in inspect(engine).get_columns("tool_invocation")}


def index_columns(engine: Engine) -> dict[tuple[str, ...], bool]:
    return {
        tuple(str(c) for c in i["column_names"]): bool(i["unique"])
        for i in inspect(engine).get_indexes("tool_invocation")
    }


def stored(engine: Engine, record: AuditRecord) -> dict[str, Any]:
    audit_sql.insert_records(engine, [record])
    [row] = [r for r in all_rows(engine) if r["invocation_id"] == record.invocation_id]
    return row


# --- schema ---


def test_an_empty_database_gets_the_table_with_every_spec_column_and_index(
    engine: Engine,
) -> None:
    actions = schema.ensure_schema(engine)

    assert actions == ["created table tool_invocation", "created table guard_verification"]
    assert columns(engine) >= {
        "id",
        "run_id",
        "tool_call_id",
        "step_id",
        "tool_name",
        "query",
        "success",
        "error_code",
        "evidence_status",
        "relevance_level",
        "top_quality_score",
        "candidate_count",
        "evidence_block_count",
        "returned_count",
        "truncated",
        "retrieval_layer",
        "retrieval_details",
        "output_preview",
        "duration_ms",
        "upstream_ms",
        "replayed",
        "created_at",
        "invocation_id",
    }
    indexes = index_columns(engine)
    assert ("run_id", "tool_call_id") in indexes
    assert ("created_at",) in indexes
    assert indexes[("invocation_id",)] is True


def test_an_existing_current_table_is_left_as_it_is_with_its_rows(engine: Engine) -> None:
    schema.ensure_schema(engine)
    audit_sql.insert_records(engine, [make_record(1)])

    assert schema.ensure_schema(engine) == []
    assert len(all_rows(engine)) == 1


def test_a_table_from_an_older_version_is_upgraded_in_place_and_keeps_its_rows(
    engine: Engine,
) -> None:
    older = Table(
        "tool_invocation",
        MetaData(),
        Column("id", Integer, primary_key=True, autoincrement=True),
        Column("run_id", String(128), nullable=False),
        Column("tool_call_id", String(128), nullable=False),
        Column("tool_name", String(64), nullable=False),
        Column("query", Text, nullable=False),
        Column("success", Boolean, nullable=False),
        Column("error_code", String(64)),
        Column("created_at", DateTime, nullable=False),
    )
    older.create(engine)
    with engine.begin() as conn:
        conn.execute(
            insert(older),
            {
                "run_id": "run-old",
                "tool_call_id": "call_old",
                "tool_name": "lookup_knowledge",
                "query": "旧的查询",
                "success": True,
                "created_at": datetime(2026, 1, 1),
            },
        )

    actions = schema.ensure_schema(engine)

    assert "added column invocation_id to tool_invocation" in actions
    assert "added column retrieval_details to tool_invocation" in actions
    assert "added column replayed to tool_invocation" in actions
    assert "created index uq_tool_invocation_invocation_id" in actions
    assert columns(engine) >= {c.name for c in schema.tool_invocation.columns}
    [old] = all_rows(engine)
    assert (old["run_id"], old["query"], old["replayed"], old["retrieval_layer"]) == (
        "run-old",
        "旧的查询",
        False,
        "py-rag",
    )
    record = make_record(1)
    assert stored(engine, record)["retrieval_details"] == record.retrieval_details
    assert schema.ensure_schema(engine) == []


def test_workers_starting_together_create_the_schema_once_without_failing(
    engine: Engine,
) -> None:
    errors: list[BaseException] = []

    def start_up() -> None:
        try:
            schema.ensure_schema(engine)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=start_up) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    assert schema.ensure_schema(engine) == []


def test_the_sqlite_file_directory_is_created(tmp_path: Path) -> None:
    path = tmp_path / "not" / "yet" / "audit.db"
    engine = audit_sql.create_audit_engine(f"sqlite:///{path}")
    try:
        schema.ensure_schema(engine)
    finally:
        engine.dispose()
    assert path.is_file()


# --- rows ---


@pytest.fixture
def table(engine: Engine) -> Engine:
    schema.ensure_schema(engine)
    return engine


def test_a_successful_lookup_round_trips_every_column(table: Engine) -> None:
    record = make_record(7)

    row = stored(table, record)

    assert row["run_id"] == "run-42"
    assert row["tool_call_id"] == "call_7"
    assert row["step_id"] == "step-1"
    assert row["tool_name"] == "lookup_knowledge"
    assert row["query"] == "网关超时怎么排查"
    assert row["success"] is True
    assert row["error_code"] is None
    assert row["evidence_status"] == "EVIDENCE_FOUND"
    assert row["relevance_level"] == "PRECISE"
    assert row["top_quality_score"] == pytest.approx(0.9147)
    assert (row["candidate_count"], row["evidence_block_count"], row["returned_count"]) == (8, 5, 5)
    assert row["truncated"] is False
    assert row["retrieval_layer"] == "py-rag"
    assert row["retrieval_details"] == record.retrieval_details
    assert row["output_preview"] == record.output_preview
    assert (row["duration_ms"], row["upstream_ms"]) == (42, 30)
    assert row["replayed"] is False
    assert row["created_at"] == datetime(2026, 11, 30, 10, 0, 0, 130000)


def test_an_upstream_failure_is_a_row_with_its_error_code_and_no_evidence_fields(
    table: Engine,
) -> None:
    record = AuditRecord(
        run_id="run-42",
        tool_call_id="call_f",
        query="q",
        success=False,
        error_code="UPSTREAM_TIMEOUT",
        duration_ms=5001,
        upstream_ms=5000,
        retrieval_details={"error": {"code": "UPSTREAM_TIMEOUT"}},
    )

    row = stored(table, record)

    assert (row["success"], row["error_code"]) == (False, "UPSTREAM_TIMEOUT")
    assert row["evidence_status"] is None
    assert row["relevance_level"] is None
    assert row["returned_count"] is None
    assert row["truncated"] is None
    assert row["retrieval_details"] == {"error": {"code": "UPSTREAM_TIMEOUT"}}


def test_a_replay_is_marked_replayed(table: Engine) -> None:
    row = stored(table, make_record(1, replayed=True, upstream_ms=None))

    assert row["replayed"] is True
    assert row["upstream_ms"] is None


def test_a_negative_observation_keeps_its_no_evidence_reference(table: Engine) -> None:
    details = {
        "retrieval_trace": {"mode": "hybrid", "no_evidence_basis": "no hit above floor"},
        "evidence_status": "no_evidence",
        "adapter": {"hit_count": 0, "dropped_invalid": 0},
        "evidence_refs": [{"raw_path": "$.no_evidence"}],
    }
    record = make_record(
        2,
        evidence_status="NO_EVIDENCE",
        relevance_level=None,
        top_quality_score=None,
        candidate_count=0,
        evidence_block_count=0,
        returned_count=0,
        retrieval_details=details,
    )

    row = stored(table, record)

    assert row["evidence_status"] == "NO_EVIDENCE"
    assert row["relevance_level"] is None
    assert row["retrieval_details"]["evidence_refs"] == [{"raw_path": "$.no_evidence"}]
    assert row["retrieval_details"] == details


def test_output_preview_is_bounded_to_2000_characters(table: Engine) -> None:
    row = stored(table, make_record(3, output_preview="证" * 5000))

    assert row["output_preview"] == "证" * OUTPUT_PREVIEW_CHARS


# Every character MySQL escaping must get right, CJK and a 4-byte emoji, quotes of JSON.
_AWKWARD = "\\ \x00 \n \r \x1a ' \" % _ 网关超时 😀 "


def test_long_text_with_every_awkward_character_round_trips_exactly(table: Engine) -> None:
    """Long strings go to MariaDB as hex literals (audit/mysql_wire.py): the same text back."""
    preview = (_AWKWARD * 60)[:OUTPUT_PREVIEW_CHARS]
    details = {"retrieval_trace": {"notes": [_AWKWARD * 20, _AWKWARD]}, "evidence_refs": []}
    record = make_record(5, query=_AWKWARD * 20, output_preview=preview, retrieval_details=details)

    row = stored(table, record)

    assert row["query"] == _AWKWARD * 20
    assert row["output_preview"] == preview
    assert row["retrieval_details"] == details


@pytest.mark.mysql
def test_mariadb_statements_carry_long_strings_as_hex_and_short_ones_escaped() -> None:
    with database("mariadb", Path()) as url, reader(url) as engine:
        connection = engine.raw_connection()
        try:
            literal = connection.driver_connection.escape(_AWKWARD * 20)
            short = connection.driver_connection.escape("it's")
            # UTF-8 cannot encode a lone surrogate: PyMySQL's own escaping takes it.
            surrogate = connection.driver_connection.escape("\ud800" * 300)
        finally:
            connection.close()
    assert literal == "_utf8mb4 X'" + (_AWKWARD * 20).encode().hex() + "'"
    assert short == "'it\\'s'"
    assert surrogate == "'" + "\ud800" * 300 + "'"


def test_values_no_column_could_hold_are_bounded_not_refused(table: Engine) -> None:
    record = make_record(
        4,
        query="长" * 20000,
        top_quality_score=float("nan"),
        retrieval_details={"score": float("inf"), "when": datetime(2026, 1, 1)},
    )

    row = stored(table, record)

    assert len(row["query"]) == schema.QUERY_CHARS
    assert row["top_quality_score"] is None
    assert row["retrieval_details"] == {"score": None, "when": "2026-01-01T00:00:00"}


def test_created_at_is_stored_as_utc_with_milliseconds(table: Engine) -> None:
    shanghai = timezone(timedelta(hours=8))
    moment = datetime(2026, 11, 30, 18, 0, 0, 123456, tzinfo=shanghai)

    row = stored(table, make_record(5, created_at=moment))

    assert row["created_at"] == datetime(2026, 11, 30, 10, 0, 0, 123000)
    assert row["created_at"].replace(tzinfo=UTC) == moment.replace(microsecond=123000)


def test_a_row_inserted_twice_is_stored_once(table: Engine) -> None:
    first, second = make_record(1), make_record(2)

    audit_sql.insert_records(table, [first, second])
    audit_sql.insert_records(table, [second, make_record(3), first])

    assert sorted(r["tool_call_id"] for r in all_rows(table)) == ["call_1", "call_2", "call_3"]


def test_two_calls_with_the_same_ids_are_two_rows(table: Engine) -> None:
    # A replay or a retried FAILED call repeats (run_id, tool_call_id): each is its own row.
    audit_sql.insert_records(table, [make_record(1), make_record(1, replayed=True)])

    assert [r["replayed"] for r in audit_sql.fetch_run(table, "run-42")] == [False, True]


def test_a_run_is_read_back_in_the_order_its_calls_happened(table: Engine) -> None:
    audit_sql.insert_records(table, [make_record(3), make_record(1), make_record(2)])
    audit_sql.insert_records(table, [make_record(9, run_id="run-other")])

    assert [r["tool_call_id"] for r in audit_sql.fetch_run(table, "run-42")] == [
        "call_1",
        "call_2",
        "call_3",
    ]
