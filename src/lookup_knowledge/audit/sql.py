"""The `tool_invocation` table: definition, engine, idempotent schema upgrade, inserts.

The table's columns and durability promise are described in docs/audit.md.

Schema management is an idempotent "create, then add what is missing" run at start-up rather
than Alembic: the audit trail is one append-only table that only ever grows (new nullable or
defaulted columns, new indexes); the `Table` below is the single source of truth; an existing
table of an older version (or one made by hand, with no `alembic_version` row to stamp) is
adopted as is and upgraded in place, never dropped; nothing but `.py` files ships; and several
workers starting at once are serialized by a MySQL named lock. A rename or a type change would
need a real migration tool: switch to Alembic then, with this shape as its baseline.

Exactly-once: each row carries a client-generated `invocation_id` under a unique index, and
inserts skip a row whose id is already there, so replaying a spool or retrying a batch that
half-succeeded never duplicates a row.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
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
    create_engine,
    false,
    inspect,
    make_url,
    text,
)
from sqlalchemy.dialects import mysql, sqlite
from sqlalchemy.engine import URL
from sqlalchemy.exc import (
    DataError,
    DBAPIError,
    IntegrityError,
    OperationalError,
    StatementError,
)
from sqlalchemy.schema import CreateColumn

from lookup_knowledge.domain.audit import OUTPUT_PREVIEW_CHARS, AuditRecord

log = logging.getLogger(__name__)

TABLE_NAME = "tool_invocation"
ID_CHARS = 128
INVOCATION_ID_CHARS = 64
# TEXT holds 65535 bytes on MySQL: 16000 four-byte characters always fit.
QUERY_CHARS = 16000
SCHEMA_LOCK_NAME = "lookup_knowledge.tool_invocation.schema"
SCHEMA_LOCK_TIMEOUT_S = 30

_TINY = 64

metadata = MetaData()

tool_invocation = Table(
    TABLE_NAME,
    metadata,
    Column(
        "id",
        BigInteger().with_variant(Integer(), "sqlite"),
        primary_key=True,
        autoincrement=True,
    ),
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
    Column(
        "created_at",
        DateTime().with_variant(mysql.DATETIME(fsp=3), "mysql", "mariadb"),
        nullable=False,
    ),
    Index("ix_tool_invocation_run_call", "run_id", "tool_call_id"),
    Index("ix_tool_invocation_created_at", "created_at"),
    Index("uq_tool_invocation_invocation_id", "invocation_id", unique=True),
    mysql_engine="InnoDB",
    mysql_charset="utf8mb4",
)

# MySQL/MariaDB errors caused by the row itself; PyMySQL reports several of these as
# OperationalError, so the class alone cannot tell them from an unreachable server.
_MYSQL_ROW_ERRORS = frozenset(
    {
        1048,  # column cannot be null
        1264,  # out of range value
        1265,  # data truncated
        1292,  # incorrect value
        1366,  # incorrect string value (e.g. bad utf8mb4)
        1406,  # data too long
        1644,  # SIGNAL from a trigger
        3140,  # invalid JSON text
        3819,  # MySQL check constraint violated
        4025,  # MariaDB CONSTRAINT_FAILED
    }
)


def is_row_error(exc: BaseException) -> bool:
    """True when the database refused this row's data: retrying the row would fail again.

    Anything else (unreachable server, lost connection, missing table, read-only server, lock
    timeout, an unknown error) means "try again later", so a row is never discarded for what
    may be an outage.
    """
    if isinstance(exc, IntegrityError | DataError):
        return True
    if isinstance(exc, DBAPIError):
        args: tuple[Any, ...] = tuple(getattr(exc.orig, "args", ()))
        return bool(args) and args[0] in _MYSQL_ROW_ERRORS
    if isinstance(exc, StatementError):
        return True  # raised in Python while binding a value
    return isinstance(exc, TypeError | ValueError | AttributeError | KeyError)


# --- JSON -----------------------------------------------------------------------------------


def json_safe(value: Any) -> Any:
    """Plain JSON data: non-finite floats become null, unknown objects their `str`."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [json_safe(v) for v in value]
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)


def dumps_json(value: Any) -> str:
    """Compact JSON, non-ASCII kept readable (operators read the column by hand)."""
    return json.dumps(json_safe(value), ensure_ascii=False, allow_nan=False, separators=(",", ":"))


# --- engine ---------------------------------------------------------------------------------


def create_audit_engine(
    database_url: str | URL,
    *,
    connect_timeout_s: int = 5,
    io_timeout_s: int = 30,
) -> Engine:
    """An engine for the audit database; the SQLite file's directory is created if missing.

    MySQL connections get bounded connect/read/write timeouts (unless the URL sets them), so
    a database that stops answering makes the writer spool instead of hanging forever.
    """
    url = make_url(database_url)
    backend = url.get_backend_name()
    connect_args: dict[str, Any] = {}
    options: dict[str, Any] = {}
    if backend == "sqlite":
        database = url.database or ""
        if database and database != ":memory:" and not database.startswith("file:"):
            Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
        connect_args["timeout"] = io_timeout_s
    elif backend in {"mysql", "mariadb"}:
        defaults = {
            "connect_timeout": connect_timeout_s,
            "read_timeout": io_timeout_s,
            "write_timeout": io_timeout_s,
            "charset": "utf8mb4",
        }
        connect_args = {k: v for k, v in defaults.items() if k not in url.query}
        options["pool_recycle"] = 3600
    return create_engine(
        url,
        pool_pre_ping=True,
        json_serializer=dumps_json,
        json_deserializer=json.loads,
        connect_args=connect_args,
        **options,
    )


def ping(engine: Engine) -> None:
    """SELECT 1; raises when the database cannot be reached."""
    with engine.connect() as conn:
        conn.execute(text("SELECT 1"))


# --- schema ---------------------------------------------------------------------------------


def ensure_schema(engine: Engine, *, attempts: int = 3) -> list[str]:
    """Create `tool_invocation`, or add the columns and indexes an older table lacks.

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
    if not inspect(conn).has_table(TABLE_NAME):
        metadata.create_all(conn, tables=[tool_invocation])
        return [f"created table {TABLE_NAME}"]
    actions: list[str] = []
    existing = {c["name"] for c in inspect(conn).get_columns(TABLE_NAME)}
    table_sql = conn.dialect.identifier_preparer.format_table(tool_invocation)
    for column in tool_invocation.columns:
        if column.name in existing:
            continue
        if column.primary_key:
            log.warning("audit schema: %s has no primary key column %r", TABLE_NAME, column.name)
            continue
        ddl = _add_column_ddl(conn, column)
        conn.execute(text(f"ALTER TABLE {table_sql} ADD COLUMN {ddl}"))
        actions.append(f"added column {column.name}")
    present = inspect(conn).get_indexes(TABLE_NAME)
    for index in sorted(tool_invocation.indexes, key=lambda i: str(i.name)):
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
    Table(TABLE_NAME, MetaData(), scratch)
    return str(CreateColumn(scratch).compile(dialect=conn.dialect))


# --- rows -----------------------------------------------------------------------------------


def _clip(value: str | None, limit: int) -> str | None:
    return None if value is None else value[:limit]


def _finite(value: float | None) -> float | None:
    if value is None:
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _optional_int(value: int | None) -> int | None:
    return None if value is None else int(value)


def db_timestamp(moment: datetime) -> datetime:
    """Naive UTC at millisecond precision: what DATETIME(3) holds on every backend."""
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC).replace(tzinfo=None)
    return moment.replace(microsecond=moment.microsecond // 1000 * 1000)


def record_to_row(record: AuditRecord) -> dict[str, Any]:
    """The insert parameters for one record, every value bounded to its column."""
    return {
        "invocation_id": record.invocation_id[:INVOCATION_ID_CHARS],
        "run_id": record.run_id[:ID_CHARS],
        "tool_call_id": record.tool_call_id[:ID_CHARS],
        "step_id": _clip(record.step_id, ID_CHARS),
        "tool_name": record.tool_name[:_TINY],
        "query": record.query[:QUERY_CHARS],
        "success": bool(record.success),
        "error_code": _clip(record.error_code, _TINY),
        "evidence_status": _clip(record.evidence_status, 32),
        "relevance_level": _clip(record.relevance_level, 32),
        "top_quality_score": _finite(record.top_quality_score),
        "candidate_count": _optional_int(record.candidate_count),
        "evidence_block_count": _optional_int(record.evidence_block_count),
        "returned_count": _optional_int(record.returned_count),
        "truncated": None if record.truncated is None else bool(record.truncated),
        "retrieval_layer": record.retrieval_layer[:32],
        "retrieval_details": json_safe(record.retrieval_details),
        "output_preview": _clip(record.output_preview, OUTPUT_PREVIEW_CHARS),
        "duration_ms": int(record.duration_ms),
        "upstream_ms": _optional_int(record.upstream_ms),
        "replayed": bool(record.replayed),
        "created_at": db_timestamp(record.created_at),
    }


def insert_rows(conn: Connection, rows: Sequence[Mapping[str, Any]]) -> None:
    """Insert rows, skipping any whose `invocation_id` is already stored (one statement)."""
    if not rows:
        return
    name = conn.dialect.name
    if name in {"mysql", "mariadb"}:
        upsert = mysql.insert(tool_invocation)
        # A no-op update on a duplicate id: unlike INSERT IGNORE it hides no other error.
        stmt: Any = upsert.on_duplicate_key_update(invocation_id=upsert.inserted.invocation_id)
        conn.execute(stmt, list(rows))
    elif name == "sqlite":
        stmt = sqlite.insert(tool_invocation).on_conflict_do_nothing(
            index_elements=[tool_invocation.c.invocation_id]
        )
        conn.execute(stmt, list(rows))
    else:
        wanted = [r["invocation_id"] for r in rows]
        stored = set(
            conn.execute(
                tool_invocation.select()
                .with_only_columns(tool_invocation.c.invocation_id)
                .where(tool_invocation.c.invocation_id.in_(wanted))
            ).scalars()
        )
        fresh = [r for r in rows if r["invocation_id"] not in stored]
        if fresh:
            conn.execute(tool_invocation.insert(), fresh)


def insert_records(engine: Engine, records: Sequence[AuditRecord]) -> None:
    """Insert records in one transaction (exactly once per `invocation_id`)."""
    rows = [record_to_row(r) for r in records]
    with engine.begin() as conn:
        insert_rows(conn, rows)


def fetch_run(engine: Engine, run_id: str) -> list[dict[str, Any]]:
    """A run's rows in the order they happened (created_at, then insert order)."""
    query = (
        tool_invocation.select()
        .where(tool_invocation.c.run_id == run_id)
        .order_by(tool_invocation.c.created_at, tool_invocation.c.id)
    )
    with engine.connect() as conn:
        return [dict(row._mapping) for row in conn.execute(query)]
