"""The SQL store of the audit trail: engine, inserts, reads, and what a failure means.

Exactly-once: each row carries a client-generated `invocation_id` under a unique index, and
inserts skip a row whose id is already there, so replaying the spool or retrying a batch that
half-succeeded never duplicates a row. A batch is one multi-row statement in one transaction:
on MariaDB/MySQL its text is written from the rows (audit/literal.py), on SQLite it is
`executemany` of a core insert.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, Table, create_engine, event, make_url, text
from sqlalchemy.dialects import mysql, sqlite
from sqlalchemy.engine import URL, Dialect
from sqlalchemy.exc import (
    ArgumentError,
    DataError,
    DBAPIError,
    IntegrityError,
    NoSuchModuleError,
    StatementError,
)

from lookup_knowledge.audit.gil import in_slices
from lookup_knowledge.audit.literal import NO_PARAMETERS, LiteralInsert, literal_insert
from lookup_knowledge.audit.schema import (
    ID_CHARS,
    INVOCATION_ID_CHARS,
    QUERY_CHARS,
    VIOLATION_CODES_CHARS,
    SchemaMismatch,
    guard_verification,
    tool_invocation,
)
from lookup_knowledge.domain.audit import OUTPUT_PREVIEW_CHARS, AuditRecord, AuditRow
from lookup_knowledge.domain.guard import GuardOutcome
from lookup_knowledge.domain.jsonsafe import dumps_bounded, escape_surrogates

SUPPORTED_BACKENDS = frozenset({"sqlite", "mysql", "mariadb"})
DETAILS_MAX_DEPTH = 16
DETAILS_MAX_BYTES = 64 * 1024
_TINY = 64


class Failure(StrEnum):
    """What a failed insert says about the database."""

    ROW = "row"  # it refused this row's content: retrying the row would fail again
    MISCONFIGURED = "misconfigured"  # wrong database, credentials, grants or table
    UNAVAILABLE = "unavailable"  # down, hung, lost connection, locked, anything else: later


# MySQL/MariaDB errors caused by the row itself; PyMySQL reports several of these as
# OperationalError, so the class alone cannot tell them from an unreachable server.
_MYSQL_ROW_ERRORS = frozenset(
    {
        1048,  # column cannot be null
        1118,  # row size too large
        1264,  # out of range value
        1265,  # data truncated
        1292,  # incorrect value
        1366,  # incorrect string value (e.g. bad utf8mb4)
        1406,  # data too long
        1644,  # SIGNAL from a trigger
        3140,  # invalid JSON text
        3819,  # MySQL check constraint violated
        4025,  # MariaDB CONSTRAINT_FAILED (e.g. JSON_VALID of JSON nested 32 deep)
    }
)
# Errors no retry fixes until someone changes the URL, the grants or the table.
_MYSQL_CONFIG_ERRORS = frozenset(
    {
        1044,  # access denied to the database
        1045,  # access denied for the user (wrong credentials)
        1049,  # unknown database
        1142,  # command denied (no INSERT grant)
        1143,  # column access denied
        1227,  # access denied: missing privilege
        1698,  # access denied for the user (auth plugin)
    }
)


def classify(exc: BaseException) -> Failure:
    """What an exception from an insert means; unknown errors are "try again later", so a row
    is never discarded for what may be an outage."""
    if isinstance(exc, SchemaMismatch | NoSuchModuleError | ArgumentError):
        return Failure.MISCONFIGURED
    code = mysql_error_code(exc)
    if code in _MYSQL_CONFIG_ERRORS:
        return Failure.MISCONFIGURED
    if isinstance(exc, IntegrityError | DataError) or code in _MYSQL_ROW_ERRORS:
        return Failure.ROW
    if isinstance(exc, DBAPIError):
        return Failure.UNAVAILABLE
    if isinstance(exc, StatementError):
        return Failure.ROW  # raised in Python while binding a value
    if isinstance(exc, TypeError | ValueError | AttributeError | KeyError):
        return Failure.ROW
    return Failure.UNAVAILABLE


def mysql_error_code(exc: BaseException) -> int | None:
    args: tuple[Any, ...] = tuple(getattr(getattr(exc, "orig", None), "args", ()) or ())
    return args[0] if args and isinstance(args[0], int) else None


def brief(exc: BaseException) -> str:
    """The driver's message, without the SQL and parameters SQLAlchemy appends: "Unknown
    database 'x' (error 1049)" rather than the driver's tuple."""
    cause: BaseException = exc.orig if isinstance(exc, DBAPIError) and exc.orig else exc
    args: tuple[Any, ...] = tuple(getattr(cause, "args", ()))
    if len(args) == 2 and isinstance(args[0], int) and isinstance(args[1], str):
        message = f"{args[1]} (error {args[0]})"
    else:
        message = str(cause).strip()
    return (message.splitlines()[0] if message else type(cause).__name__)[:300]


# --- engine ---------------------------------------------------------------------------------


def create_audit_engine(
    database_url: str | URL,
    *,
    timeout_s: float = 10,
    details_max_depth: int = DETAILS_MAX_DEPTH,
    details_max_bytes: int = DETAILS_MAX_BYTES,
) -> Engine:
    """An engine for the audit database; the SQLite file's directory is created if missing.

    MySQL connections get bounded connect/read/write timeouts (unless the URL sets them), so a
    database that stops answering holds the writer for at most `timeout_s` per call.
    `retrieval_details` is bounded as it is serialized (docs/audit.md#bounds).
    """
    url = make_url(database_url)
    backend = url.get_backend_name()
    connect_args: dict[str, Any] = {}
    options: dict[str, Any] = {}
    if backend == "sqlite":
        database = url.database or ""
        if database and database != ":memory:" and not database.startswith("file:"):
            Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
        connect_args["timeout"] = timeout_s
    elif backend in {"mysql", "mariadb"}:
        seconds = max(1, math.ceil(timeout_s))
        defaults = {
            "connect_timeout": seconds,
            "read_timeout": seconds,
            "write_timeout": seconds,
            "charset": "utf8mb4",
        }
        connect_args = {k: v for k, v in defaults.items() if k not in url.query}
        options["pool_recycle"] = 3600
    serializer = functools.partial(
        dumps_details, max_depth=details_max_depth, max_bytes=details_max_bytes
    )
    engine = create_engine(
        url,
        # No ping before each batch: the writer pings idle connections itself and retries a
        # batch that met a dead one (audit/writer.py).
        pool_pre_ping=False,
        json_serializer=serializer,
        json_deserializer=json.loads,
        connect_args=connect_args,
        **options,
    )
    if backend == "sqlite":
        event.listen(engine, "connect", _sqlite_write_ahead_log)
    elif url.get_driver_name() == "pymysql":
        from lookup_knowledge.audit import mysql_wire

        event.listen(engine, "do_connect", mysql_wire.connect)
    return engine


def _sqlite_write_ahead_log(dbapi_connection: Any, _: Any) -> None:
    """WAL: one flush to disk per commit instead of several; readers never block the writer."""
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=FULL")  # a committed batch survives a power loss
    finally:
        cursor.close()


def ping(engine: Engine) -> None:
    """SELECT 1; raises when the database cannot be reached."""
    with engine.connect() as conn:
        conn.execute(text("SELECT 1"))


def dumps_details(value: Any, *, max_depth: int, max_bytes: int) -> str:
    """`retrieval_details` as JSON within the bounds, marked `details_truncated` when cut.

    The trace goes last, so when something must give it is py-rag's trace, not our summaries.
    """
    mapping = type(value) is dict or isinstance(value, Mapping)  # a dict skips the ABC check
    if mapping and "retrieval_trace" in value:
        value = {k: v for k, v in value.items() if k != "retrieval_trace"} | {
            "retrieval_trace": value["retrieval_trace"]
        }
    encoded, cut = dumps_bounded(value, max_depth=max_depth, max_bytes=max_bytes - 32)
    marked = mapping and bool(value.get("details_truncated"))
    if cut and encoded.startswith("{") and not marked:
        rest = encoded[1:]
        encoded = '{"details_truncated":true' + ("," + rest if rest != "}" else "}")
    return encoded


# --- rows -----------------------------------------------------------------------------------


def _text(value: str, limit: int) -> str:
    return escape_surrogates(value)[:limit]


def _optional_text(value: str | None, limit: int) -> str | None:
    return None if value is None else _text(value, limit)


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
    """The insert parameters for one record, every value valid and bounded to its column."""
    return {
        "invocation_id": _text(record.invocation_id, INVOCATION_ID_CHARS),
        "run_id": _text(record.run_id, ID_CHARS),
        "tool_call_id": _text(record.tool_call_id, ID_CHARS),
        "step_id": _optional_text(record.step_id, ID_CHARS),
        "tool_name": _text(record.tool_name, _TINY),
        "query": _text(record.query, QUERY_CHARS),
        "success": bool(record.success),
        "error_code": _optional_text(record.error_code, _TINY),
        "evidence_status": _optional_text(record.evidence_status, 32),
        "relevance_level": _optional_text(record.relevance_level, 32),
        "top_quality_score": _finite(record.top_quality_score),
        "candidate_count": _optional_int(record.candidate_count),
        "evidence_block_count": _optional_int(record.evidence_block_count),
        "returned_count": _optional_int(record.returned_count),
        "truncated": None if record.truncated is None else bool(record.truncated),
        "retrieval_layer": _text(record.retrieval_layer, 32),
        "retrieval_details": record.retrieval_details,
        "output_preview": _optional_text(record.output_preview, OUTPUT_PREVIEW_CHARS),
        "duration_ms": int(record.duration_ms),
        "upstream_ms": _optional_int(record.upstream_ms),
        "replayed": bool(record.replayed),
        "created_at": db_timestamp(record.created_at),
    }


def outcome_to_row(outcome: GuardOutcome) -> dict[str, Any]:
    """The `guard_verification` insert parameters of one report verification."""
    codes = sorted({v.code for v in outcome.violations})
    return {
        "invocation_id": _text(outcome.invocation_id, INVOCATION_ID_CHARS),
        "run_id": _text(outcome.run_id, ID_CHARS),
        "outcome": _text(outcome.outcome, _TINY),
        "ok": outcome.ok,
        "error_code": _optional_text(outcome.error_code, _TINY),
        "violation_count": len(outcome.violations),
        "violation_codes": _text(",".join(codes), VIOLATION_CODES_CHARS) if codes else None,
        # bounded like retrieval_details by the engine's JSON serializer
        "violations": [{"code": v.code, "path": v.path} for v in outcome.violations] or None,
        "analysis_count": int(outcome.analysis_count),
        "citation_count": int(outcome.citation_count),
        "tool_call_count": int(outcome.tool_call_count),
        "ledger_entry_count": int(outcome.ledger_entry_count),
        "snapshot_count": int(outcome.snapshot_count),
        "report_sha256": _optional_text(outcome.report_sha256 or None, _TINY),
        "duration_ms": _finite(outcome.duration_ms) or 0.0,
        "created_at": db_timestamp(outcome.created_at),
    }


@functools.cache
def _insert_skipping_known(dialect: str, table: Table) -> Any:
    """The insert for a dialect, built once (building it costs more than running it)."""
    if dialect in {"mysql", "mariadb"}:
        upsert = mysql.insert(table)
        # A no-op update on a duplicate id: unlike INSERT IGNORE it hides no other error.
        return upsert.on_duplicate_key_update(invocation_id=upsert.inserted.invocation_id)
    if dialect == "sqlite":
        return sqlite.insert(table).on_conflict_do_nothing(index_elements=[table.c.invocation_id])
    return None


def insert_rows(
    conn: Connection, rows: Sequence[Mapping[str, Any]], table: Table = tool_invocation
) -> None:
    """Insert rows, skipping any whose `invocation_id` is already stored (one statement)."""
    if not rows:
        return
    if conn.dialect.name in {"mysql", "mariadb"}:
        literal = _literal_insert(conn.dialect, table, tuple(rows[0]))
        if literal is not None:
            for statement in literal.statements(rows):
                conn.exec_driver_sql(statement, execution_options=NO_PARAMETERS)
            return
    stmt = _insert_skipping_known(conn.dialect.name, table)
    if stmt is not None:
        conn.execute(stmt, list(rows))
    else:
        wanted = [r["invocation_id"] for r in rows]
        stored = set(
            conn.execute(
                table.select()
                .with_only_columns(table.c.invocation_id)
                .where(table.c.invocation_id.in_(wanted))
            ).scalars()
        )
        fresh = [r for r in rows if r["invocation_id"] not in stored]
        if fresh:
            conn.execute(table.insert(), fresh)


def _literal_insert(dialect: Dialect, table: Table, keys: tuple[str, ...]) -> LiteralInsert | None:
    """The literal insert of `keys` into `table` (audit/literal.py), or None for the core path."""
    return literal_insert(dialect, _insert_skipping_known(dialect.name, table), table, keys)


def insert_records(engine: Engine, records: Sequence[AuditRow]) -> None:
    """Insert records in one transaction, one commit (exactly once per `invocation_id`); a
    lookup's row goes to `tool_invocation`, a report verification's to `guard_verification`."""
    calls = [record_to_row(r) for r in in_slices(records) if isinstance(r, AuditRecord)]
    verifications = [outcome_to_row(r) for r in records if isinstance(r, GuardOutcome)]
    with engine.begin() as conn:
        insert_rows(conn, calls)
        insert_rows(conn, verifications, guard_verification)


def fetch_run(engine: Engine, run_id: str) -> list[dict[str, Any]]:
    """A run's rows in the order they happened (created_at, then insert order)."""
    query = (
        tool_invocation.select()
        .where(tool_invocation.c.run_id == run_id)
        .order_by(tool_invocation.c.created_at, tool_invocation.c.id)
    )
    with engine.connect() as conn:
        return [dict(row._mapping) for row in conn.execute(query)]


def fetch_run_verifications(engine: Engine, run_id: str) -> list[dict[str, Any]]:
    """A run's report verifications, oldest first."""
    query = (
        guard_verification.select()
        .where(guard_verification.c.run_id == run_id)
        .order_by(guard_verification.c.created_at, guard_verification.c.id)
    )
    with engine.connect() as conn:
        return [dict(row._mapping) for row in conn.execute(query)]
