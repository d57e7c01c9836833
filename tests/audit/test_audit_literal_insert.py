"""MariaDB/MySQL rows go in as one statement whose text the audit writes itself (audit/sql.py).

The literal insert must store exactly what SQLAlchemy's core insert stored: every column,
NULLs and JSON null alike, for both tables. These tests write the same rows both ways into
one real MariaDB database and compare what the server holds, byte for byte.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, text

from audit_support import database, make_record, reader
from lookup_knowledge.audit import literal, schema
from lookup_knowledge.audit import sql as audit_sql
from lookup_knowledge.domain.audit import OUTPUT_PREVIEW_CHARS
from lookup_knowledge.domain.guard import GuardOutcome, GuardViolationRef

# Every character MySQL escaping must get right, CJK and a 4-byte emoji, quotes of JSON.
_AWKWARD = "\\ \x00 \n \r \x1a ' \" % %s %(x)s _ 网关超时 😀 "


def varied_records(run_id: str) -> list[Any]:
    """Lookup rows and report verifications with every kind of value a column can take."""
    return [
        make_record(1, run_id=run_id),
        make_record(
            2,
            run_id=run_id,
            step_id=None,
            success=False,
            error_code="UPSTREAM_TIMEOUT",
            evidence_status=None,
            relevance_level=None,
            top_quality_score=None,
            candidate_count=None,
            evidence_block_count=None,
            returned_count=None,
            truncated=None,
            retrieval_details=None,
            output_preview=None,
            upstream_ms=None,
        ),
        make_record(
            3,
            run_id=run_id,
            query=_AWKWARD * 3,
            step_id="",
            top_quality_score=1e-7,
            truncated=True,
            replayed=True,
            duration_ms=2**31 - 1,
            output_preview=(_AWKWARD * 200)[:OUTPUT_PREVIEW_CHARS],
            retrieval_details={"note": _AWKWARD, "nested": [[1.5, None, True], {"": ""}]},
        ),
        make_record(4, run_id=run_id, top_quality_score=0.1, retrieval_details={}),
        make_record(5, run_id=run_id, created_at=datetime(2026, 12, 1, 0, 0, 0, tzinfo=UTC)),
        GuardOutcome(
            run_id=run_id,
            outcome="violations",
            violations=(GuardViolationRef("QUOTE_NOT_IN_EXCERPT", "$.analyses[0]"),),
            analysis_count=3,
            report_sha256="ab" * 32,
            duration_ms=12.5,
            created_at=datetime(2026, 11, 30, 11, 0, 0, 250000, tzinfo=UTC),
        ),
        GuardOutcome(
            run_id=run_id,
            outcome="LEDGER_UNAVAILABLE",
            duration_ms=math.nan,
            created_at=datetime(2026, 11, 30, 11, 0, 1, tzinfo=UTC),
        ),
    ]


COLUMNS_EXCEPT_ID = {
    "tool_invocation": [c.name for c in schema.tool_invocation.c if c.name != "id"],
    "guard_verification": [c.name for c in schema.guard_verification.c if c.name != "id"],
}


def raw_rows(engine: Engine, table: str, run_id: str) -> list[tuple[Any, ...]]:
    """Every column but the id as the server holds it: text as bytes, JSON as its text, and
    whether each value is SQL NULL (so JSON null and NULL cannot pass for each other)."""
    names = COLUMNS_EXCEPT_ID[table]
    shown = ", ".join(f"HEX(`{n}`), `{n}` IS NULL" for n in names if n != "run_id")
    query = f"SELECT {shown} FROM {table} WHERE run_id = :run ORDER BY created_at, id"
    with engine.connect() as conn:
        return [tuple(row) for row in conn.execute(text(query), {"run": run_id})]


def without_ids(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return [row[2:] for row in rows]  # invocation_id differs between the two writes


@pytest.fixture
def mariadb() -> Iterator[Engine]:
    with database("mariadb", Path()) as url, reader(url) as engine:
        schema.ensure_schema(engine)
        yield engine


def core_insert(engine: Engine, records: list[Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """The rows through SQLAlchemy's core insert and the driver's executemany, as before."""
    with monkeypatch.context() as patch:
        patch.setattr(audit_sql, "_literal_insert", lambda *_: None)
        audit_sql.insert_records(engine, records)


@pytest.mark.mysql
def test_the_literal_insert_stores_what_the_core_insert_stored(
    mariadb: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    core_insert(mariadb, varied_records("core"), monkeypatch)
    audit_sql.insert_records(mariadb, varied_records("literal"))

    for table in COLUMNS_EXCEPT_ID:
        core = raw_rows(mariadb, table, "core")
        literal = raw_rows(mariadb, table, "literal")
        assert len(literal) == len(core) > 0
        assert without_ids(literal) == without_ids(core)
    rows = audit_sql.fetch_run(mariadb, "literal")
    [awkward] = [r for r in rows if r["tool_call_id"] == "call_3"]
    assert awkward["query"] == _AWKWARD * 3
    assert awkward["retrieval_details"]["note"] == _AWKWARD


@pytest.mark.mysql
def test_the_literal_insert_is_used_on_mariadb(mariadb: Engine) -> None:
    with mariadb.connect() as conn:
        keys = tuple(audit_sql.record_to_row(make_record(1)))
        insert = audit_sql._literal_insert(conn.dialect, schema.tool_invocation, keys)
    assert insert is not None
    assert insert.prefix.startswith("INSERT INTO tool_invocation (")
    assert "ON DUPLICATE KEY UPDATE" in insert.postfix


@pytest.mark.mysql
def test_rows_past_one_statement_are_cut_into_several_in_one_transaction(
    mariadb: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent: list[str] = []
    original = literal.LiteralInsert.statements

    def counted(self: literal.LiteralInsert, rows: Any) -> Iterator[str]:
        for statement in original(self, rows):
            sent.append(statement)
            yield statement

    monkeypatch.setattr(literal.LiteralInsert, "statements", counted)
    monkeypatch.setattr(literal, "MAX_STATEMENT_BYTES", 6000)
    records = [make_record(n, output_preview="x" * 1000) for n in range(12)]

    audit_sql.insert_records(mariadb, records)
    audit_sql.insert_records(mariadb, [*records[5:], make_record(99)])  # known ids skipped

    assert len(sent) > 3
    assert all(len(statement) <= 6000 for statement in sent)
    ids = [r["invocation_id"] for r in audit_sql.fetch_run(mariadb, "run-42")]
    assert len(ids) == len(set(ids)) == 13


@pytest.mark.mysql
def test_a_value_with_no_literal_fails_the_batch_as_a_row_error(mariadb: Engine) -> None:
    rows = [audit_sql.record_to_row(make_record(n)) for n in (1, 2)]
    rows[1]["top_quality_score"] = math.nan  # record_to_row never leaves one; the text refuses it
    with pytest.raises(ValueError) as failed, mariadb.begin() as conn:
        audit_sql.insert_rows(conn, rows)

    assert audit_sql.classify(failed.value) is audit_sql.Failure.ROW
    assert audit_sql.fetch_run(mariadb, "run-42") == []  # nothing of the batch was written


def test_literals_are_written_as_pymysql_writes_them() -> None:
    from pymysql.converters import escape_datetime, escape_float

    moment = datetime(2026, 11, 30, 10, 0, 0, 123000)
    for value in (0.1, 1e-7, 1e22, -2.5, 0.0, 3.0):
        assert literal.sql_float(value) == escape_float(value)
    assert literal.sql_datetime(moment) == escape_datetime(moment)
    assert literal.sql_datetime(moment.replace(microsecond=0)) == escape_datetime(
        moment.replace(microsecond=0)
    )
    assert literal.hex_literal("it's") == "_utf8mb4 X'" + b"it's".hex() + "'"
    with pytest.raises(ValueError):
        literal.sql_datetime(moment.replace(tzinfo=UTC) + timedelta(0))
    with pytest.raises(ValueError):
        literal.sql_float(math.nan)


@pytest.mark.parametrize(
    ("driver", "alias", "postfix"),
    [
        ("pymysql", False, " ON DUPLICATE KEY UPDATE invocation_id = VALUES(invocation_id)"),
        ("pymysql", True, " AS new ON DUPLICATE KEY UPDATE invocation_id = new.invocation_id"),
        ("mysqldb", False, " ON DUPLICATE KEY UPDATE invocation_id = VALUES(invocation_id)"),
    ],
)
def test_the_statement_is_sqlalchemys_upsert_for_each_server_and_paramstyle(
    driver: str, alias: bool, postfix: str
) -> None:
    """MariaDB and MySQL before 8.0.20 skip a known id with VALUES(), later MySQL with a row
    alias; PyMySQL binds by name, mysqlclient by position. Each gets its own statement."""
    from sqlalchemy.dialects.mysql import mysqldb, pymysql

    dialect = (pymysql if driver == "pymysql" else mysqldb).dialect()
    dialect._requires_alias_for_on_duplicate_key = alias
    records = [make_record(1), make_record(2, output_preview=None)]
    rows = [audit_sql.record_to_row(r) for r in records]

    insert = audit_sql._literal_insert(dialect, schema.tool_invocation, tuple(rows[0]))

    assert insert is not None and insert.postfix == postfix
    [statement] = insert.statements(rows)
    columns = ", ".join(rows[0])
    assert statement.startswith(f"INSERT INTO tool_invocation ({columns}) VALUES (_utf8mb4 X'")
    assert statement.endswith(postfix) and statement.count("),(") == 1
    assert statement.isascii() and "%" not in statement
    assert "NULL" in statement and records[0].invocation_id.encode().hex() in statement
