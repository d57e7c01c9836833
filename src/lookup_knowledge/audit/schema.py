"""The audit tables: their definitions, the idempotent upgrade, the compatibility check.

`tool_invocation` (one row per lookup call) is described in docs/audit.md#columns,
`guard_verification` (one row per report verification) in docs/audit.md#guard-verifications.

Schema management is an idempotent "create, then add what is missing" run at start-up rather
than Alembic: the audit trail is append-only tables that only ever grow (new nullable or
defaulted columns, new indexes); the `Table` below is the single source of truth; an existing
table of an older version (or one made by hand, with no `alembic_version` row to stamp) is
adopted as is and upgraded in place, never dropped; nothing but `.py` files ships; and several
workers starting at once are serialized by a MySQL named lock. A rename or a type change would
need a real migration tool: switch to Alembic then, with this shape as its baseline.

A table the rows cannot go into (a column of the wrong kind or too short, a NOT NULL column this
service does not fill) is a misconfiguration, reported by `check_compatible`, never "fixed".
"""

from __future__ import annotations

import datetime
import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    Connection,
    DateTime,
    DefaultClause,
    Double,
    Engine,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    false,
    inspect,
    text,
    types,
)
from sqlalchemy.dialects import mysql
from sqlalchemy.exc import OperationalError
from sqlalchemy.schema import CreateColumn

log = logging.getLogger(__name__)

TABLE_NAME = "tool_invocation"
GUARD_TABLE_NAME = "guard_verification"
ID_CHARS = 128
INVOCATION_ID_CHARS = 64
# TEXT holds 65535 bytes on MySQL: 16000 four-byte characters always fit.
QUERY_CHARS = 16000
VIOLATION_CODES_CHARS = 1024
SCHEMA_LOCK_NAME = "lookup_knowledge.tool_invocation.schema"
SCHEMA_LOCK_TIMEOUT_S = 30

_TINY = 64

metadata = MetaData()


def _id_column() -> Column[int]:
    """A surrogate key: BIGINT on MySQL, INTEGER on SQLite (its only auto-increment type)."""
    return Column(
        "id", BigInteger().with_variant(Integer(), "sqlite"), primary_key=True, autoincrement=True
    )


def _created_at_column() -> Column[datetime.datetime]:
    """Millisecond timestamps on MySQL/MariaDB (DATETIME(3)), plain DATETIME elsewhere."""
    return Column(
        "created_at",
        DateTime().with_variant(mysql.DATETIME(fsp=3), "mysql", "mariadb"),
        nullable=False,
    )


tool_invocation = Table(
    TABLE_NAME,
    metadata,
    _id_column(),
    Column("invocation_id", String(INVOCATION_ID_CHARS), nullable=True),
    Column("run_id", String(ID_CHARS), nullable=False),
    Column("tool_call_id", String(ID_CHARS), nullable=False),
    Column("step_id", String(ID_CHARS), nullable=True),
    Column("tool_name", String(_TINY), nullable=False, server_default="lookup_knowledge"),
    Column("query", Text(), nullable=False),
    Column("success", Boolean(create_constraint=False), nullable=False),
    Column("error_code", String(_TINY), nullable=True),
    Column("evidence_status", String(32), nullable=True),
    Column("relevance_level", String(32), nullable=True),
    Column("top_quality_score", Double(), nullable=True),
    Column("candidate_count", Integer(), nullable=True),
    Column("evidence_block_count", Integer(), nullable=True),
    Column("returned_count", Integer(), nullable=True),
    Column("truncated", Boolean(create_constraint=False), nullable=True),
    Column("retrieval_layer", String(32), nullable=False, server_default="py-rag"),
    Column("retrieval_details", JSON(), nullable=True),
    Column("output_preview", Text(), nullable=True),
    Column("duration_ms", Integer(), nullable=False, server_default=text("0")),
    Column("upstream_ms", Integer(), nullable=True),
    Column("replayed", Boolean(create_constraint=False), nullable=False, server_default=false()),
    _created_at_column(),
    Index("ix_tool_invocation_run_call", "run_id", "tool_call_id"),
    Index("ix_tool_invocation_created_at", "created_at"),
    Index("uq_tool_invocation_invocation_id", "invocation_id", unique=True),
    mysql_engine="InnoDB",
    mysql_charset="utf8mb4",
)


guard_verification = Table(
    GUARD_TABLE_NAME,
    metadata,
    _id_column(),
    Column("invocation_id", String(INVOCATION_ID_CHARS), nullable=False),
    Column("run_id", String(ID_CHARS), nullable=False),
    Column("outcome", String(_TINY), nullable=False),
    Column("ok", Boolean(create_constraint=False), nullable=False),
    Column("error_code", String(_TINY), nullable=True),
    Column("violation_count", Integer(), nullable=False, server_default=text("0")),
    Column("violation_codes", String(VIOLATION_CODES_CHARS), nullable=True),
    Column("violations", JSON(), nullable=True),
    Column("analysis_count", Integer(), nullable=False, server_default=text("0")),
    Column("citation_count", Integer(), nullable=False, server_default=text("0")),
    Column("tool_call_count", Integer(), nullable=False, server_default=text("0")),
    Column("ledger_entry_count", Integer(), nullable=False, server_default=text("0")),
    Column("snapshot_count", Integer(), nullable=False, server_default=text("0")),
    Column("report_sha256", String(_TINY), nullable=True),
    Column("duration_ms", Double(), nullable=False, server_default=text("0")),
    _created_at_column(),
    Index("ix_guard_verification_run_created", "run_id", "created_at"),
    Index("ix_guard_verification_created_at", "created_at"),
    Index("uq_guard_verification_invocation_id", "invocation_id", unique=True),
    mysql_engine="InnoDB",
    mysql_charset="utf8mb4",
)

TABLES = (tool_invocation, guard_verification)


class SchemaMismatch(Exception):
    """The existing table cannot take the service's rows (a misconfiguration)."""


def ensure_schema(engine: Engine, *, attempts: int = 3) -> list[str]:
    """Create the audit tables, or add the columns and indexes older tables lack.

    Returns what was done (empty when the schema was already current). Never drops or
    rewrites anything. A race with another process doing the same is retried.
    """
    for attempt in range(1, attempts + 1):
        try:
            with engine.connect() as conn, _schema_lock(conn):
                actions = _ensure_schema(conn)
                conn.commit()
        except Exception as exc:
            if not _is_schema_race(exc) or attempt == attempts:
                raise
            # Another process created the table/column between our look and our DDL.
            log.info("audit schema: retrying after a concurrent change (%s)", exc)
            time.sleep(0.05 * attempt)
            continue
        for action in actions:
            log.info("audit schema: %s", action)
        return actions
    raise AssertionError("unreachable")


def _is_schema_race(exc: BaseException) -> bool:
    message = str(exc).lower()
    return "already exists" in message or "duplicate" in message or "locked" in message


@contextmanager
def _schema_lock(conn: Connection) -> Iterator[None]:
    if conn.dialect.name not in {"mysql", "mariadb"}:
        yield
        return
    got = conn.execute(
        text("SELECT GET_LOCK(:name, :timeout)"),
        {"name": SCHEMA_LOCK_NAME, "timeout": SCHEMA_LOCK_TIMEOUT_S},
    ).scalar()
    if got != 1:
        raise OperationalError("SELECT GET_LOCK", {}, RuntimeError("audit schema lock timeout"))
    try:
        yield
    finally:
        conn.execute(text("SELECT RELEASE_LOCK(:name)"), {"name": SCHEMA_LOCK_NAME})


def _ensure_schema(conn: Connection) -> list[str]:
    actions: list[str] = []
    for table in TABLES:
        actions.extend(_ensure_table(conn, table))
    return actions


def _ensure_table(conn: Connection, table: Table) -> list[str]:
    if not inspect(conn).has_table(table.name):
        metadata.create_all(conn, tables=[table])
        return [f"created table {table.name}"]
    actions: list[str] = []
    existing = {c["name"] for c in inspect(conn).get_columns(table.name)}
    table_sql = conn.dialect.identifier_preparer.format_table(table)
    for column in table.columns:
        if column.name in existing:
            continue
        if column.primary_key:
            log.warning("audit schema: %s has no primary key column %r", table.name, column.name)
            continue
        ddl = _add_column_ddl(conn, column)
        conn.execute(text(f"ALTER TABLE {table_sql} ADD COLUMN {ddl}"))
        actions.append(f"added column {column.name} to {table.name}")
    present = inspect(conn).get_indexes(table.name)
    for index in sorted(table.indexes, key=lambda i: str(i.name)):
        wanted = [c.name for c in index.columns]
        if any(
            i["name"] == index.name
            or (list(i["column_names"]) == wanted and bool(i["unique"]) == index.unique)
            for i in present
        ):
            continue
        index.create(conn)
        actions.append(f"created index {index.name}")
    return actions


def _add_column_ddl(conn: Connection, column: Column[Any]) -> str:
    """The column's DDL; NOT NULL without a default is relaxed, as old rows have no value."""
    default = column.server_default
    nullable = bool(column.nullable) or default is None
    scratch = Column(column.name, column.type, nullable=nullable)
    if isinstance(default, DefaultClause):
        scratch.server_default = DefaultClause(default.arg)
    Table(str(column.table.name), MetaData(), scratch)
    return str(CreateColumn(scratch).compile(dialect=conn.dialect))


# --- compatibility -------------------------------------------------------------------------

_KINDS: dict[str, tuple[type[types.TypeEngine[Any]], ...]] = {
    "text": (types.String, types.Text, types.JSON, types.Enum),
    "integer": (types.Integer, types.Boolean, types.Numeric),
    "number": (types.Float, types.Numeric, types.Integer),
    "time": (types.DateTime, types.TIMESTAMP),
    "json": (types.JSON, types.Text, types.String),
}


def _kind(column: Column[Any]) -> str:
    kind = column.type
    if isinstance(kind, JSON):
        return "json"
    if isinstance(kind, String):
        return "text"
    if isinstance(kind, Boolean | Integer):
        return "integer"
    if isinstance(kind, Double):
        return "number"
    return "time"


def check_compatible(engine: Engine) -> None:
    """Raise SchemaMismatch when an existing table cannot take rows; call after ensure_schema."""
    problems: list[str] = []
    for table in TABLES:
        found = {c["name"]: c for c in inspect(engine).get_columns(table.name)}
        problems.extend(f"table {table.name}: {p}" for p in _table_problems(table, found))
    if problems:
        raise SchemaMismatch("; ".join(problems))


def _table_problems(table: Table, found: dict[str, Any]) -> list[str]:
    problems: list[str] = []
    for column in table.columns:
        existing = found.get(column.name)
        if existing is None:
            continue
        have = existing["type"]
        kind = _kind(column)
        if kind != "time" and not isinstance(have, _KINDS[kind]):
            problems.append(f"column {column.name} is {have}, the service writes {kind}")
        elif kind == "time" and not isinstance(have, _KINDS["time"]):
            problems.append(f"column {column.name} is {have}, the service writes a date-time")
        wanted = getattr(column.type, "length", None)
        length = getattr(have, "length", None)
        if kind == "text" and wanted and length and length < wanted:
            problems.append(f"column {column.name} holds {length} characters, rows need {wanted}")
    ours = {c.name for c in table.columns}
    for name, existing in found.items():
        required = not existing["nullable"] and existing.get("default") is None
        if name not in ours and required and not existing.get("autoincrement"):
            problems.append(
                f"column {name} is NOT NULL without a default; the service never sets it"
            )
    return problems
