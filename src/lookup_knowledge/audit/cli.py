"""`lookup-knowledge audit`: read the audit trail (docs/audit.md).

    audit show RUN_ID      a run's calls (`tool_invocation`) and report verifications
                           (`guard_verification`)
    audit quarantine       the rows the database refused, from the spool directory
    audit requeue          write the quarantined rows to the database again (after a fix)

`show` exits 0 when the run has rows, 1 when it has none, 2 when the database cannot be read;
`quarantine` exits 0 when it is empty, 1 when it holds rows; `requeue` exits 0 when every
row was written, 1 when the database refused some again, 2 when it could not be used.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

from sqlalchemy import make_url
from sqlalchemy.exc import SQLAlchemyError

from lookup_knowledge.audit import sql as audit_sql
from lookup_knowledge.audit.quarantine import QUARANTINE_FILE, read_entries, requeue
from lookup_knowledge.domain.audit import AuditRow
from lookup_knowledge.settings import Settings

QUERY_PREVIEW_CHARS = 40

_COLUMNS = (
    "time (UTC)",
    "tool_call_id",
    "status",
    "evidence",
    "level",
    "cand/blk/ret",
    "trunc",
    "ms",
    "upstream",
    "replayed",
    "query",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lookup-knowledge audit", description="Read the audit trail."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    show = commands.add_parser(
        "show", help="print the tool calls and report verifications of one agent run"
    )
    show.add_argument("run_id", help="the run whose calls and verifications to list")
    show.add_argument(
        "--database-url",
        default=None,
        help="audit database (default: AUDIT_DATABASE_URL from the environment or .env)",
    )
    show.set_defaults(handler=show_run)
    quarantine = commands.add_parser(
        "quarantine", help="list the rows the database refused (kept in the spool directory)"
    )
    quarantine.add_argument(
        "--spool-dir",
        type=Path,
        default=None,
        help="spool directory (default: AUDIT_SPOOL_DIR from the environment or .env)",
    )
    quarantine.add_argument(
        "--json", action="store_true", help="print each entry, row included, as one JSON line"
    )
    quarantine.set_defaults(handler=show_quarantine)
    again = commands.add_parser(
        "requeue",
        help="write the quarantined rows to the database again, once what refused them is fixed",
    )
    again.add_argument(
        "--spool-dir",
        type=Path,
        default=None,
        help="spool directory (default: AUDIT_SPOOL_DIR from the environment or .env)",
    )
    again.add_argument(
        "--database-url",
        default=None,
        help="audit database (default: AUDIT_DATABASE_URL from the environment or .env)",
    )
    again.set_defaults(handler=requeue_quarantine)
    return parser


def main(argv: Sequence[str] | None = None, *, out: TextIO | None = None) -> int:
    args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    code: int = args.handler(args, out or sys.stdout)
    return code


def show_run(args: argparse.Namespace, out: TextIO) -> int:
    url = args.database_url or _settings().audit_database_url.get_secret_value()
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite" and not _sqlite_file_exists(parsed.database):
        print(f"no audit database at {parsed.database}", file=sys.stderr)
        return 2
    engine = audit_sql.create_audit_engine(parsed)
    try:
        rows = audit_sql.fetch_run(engine, args.run_id)
        verifications = audit_sql.fetch_run_verifications(engine, args.run_id)
    except SQLAlchemyError as exc:
        shown = engine.url.render_as_string(hide_password=True)
        print(f"cannot read the audit table at {shown}: {audit_sql.brief(exc)}", file=sys.stderr)
        return 2
    finally:
        engine.dispose()
    if not rows and not verifications:
        print(f"no calls recorded for run {args.run_id}", file=out)
        return 1
    print(f"run {args.run_id}: {len(rows)} call(s)", file=out)
    if rows:
        print(render_table(rows), file=out)
    if verifications:
        print(f"{len(verifications)} report verification(s)", file=out)
        for row in verifications:
            print(_verification_line(row), file=out)
    return 0


def _verification_line(row: dict[str, Any]) -> str:
    """One `guard_verification` row: when, outcome, its violations, what it covered."""
    codes = f" ({row['violation_codes']})" if row["violation_codes"] else ""
    return (
        f"{_time(row['created_at'])}  {row['outcome']}  "
        f"{row['violation_count']} violation(s){codes}  "
        f"{row['citation_count']} citation(s) across {row['tool_call_count']} call(s)  "
        f"{row['duration_ms']:.1f} ms"
    )


def show_quarantine(args: argparse.Namespace, out: TextIO) -> int:
    path = (args.spool_dir or _settings().audit_spool_dir) / QUARANTINE_FILE
    entries = list(read_entries(path))
    if args.json:
        for entry in entries:
            print(json.dumps(entry, ensure_ascii=False), file=out)
        return 1 if entries else 0
    if not entries:
        print(f"no quarantined rows in {path}", file=out)
        return 0
    print(f"{len(entries)} quarantined row(s) in {path}", file=out)
    for entry in entries:
        record = entry.get("record") or {}
        print(
            f"{entry.get('quarantined_at', '-')}  {entry['invocation_id']}  "
            f"{record.get('run_id', '-')}/{record.get('tool_call_id', record.get('table', '-'))}  "
            f"{entry.get('reason', '')}",
            file=out,
        )
    return 1


def requeue_quarantine(args: argparse.Namespace, out: TextIO) -> int:
    spool_dir = args.spool_dir or _settings().audit_spool_dir
    url = args.database_url or _settings().audit_database_url.get_secret_value()
    if not list(read_entries(spool_dir / QUARANTINE_FILE)):
        print(f"no quarantined rows in {spool_dir / QUARANTINE_FILE}", file=out)
        return 0
    engine = audit_sql.create_audit_engine(url)

    def write(row: AuditRow) -> None:
        audit_sql.insert_records(engine, [row])  # a row already stored is skipped, not doubled

    def explain(exc: Exception) -> tuple[bool, str]:
        return audit_sql.classify(exc) is audit_sql.Failure.ROW, audit_sql.brief(exc)

    try:
        result = requeue(spool_dir, write, explain)
    finally:
        engine.dispose()
    print(f"{len(result.written)} row(s) written to the database", file=out)
    for invocation_id, reason in result.refused.items():
        print(f"refused again: {invocation_id}  {reason}", file=out)
    if result.stopped is not None:
        shown = engine.url.render_as_string(hide_password=True)
        print(
            f"stopped: cannot write to {shown}: {result.stopped}; "
            f"{result.untried} row(s) left in the quarantine",
            file=sys.stderr,
        )
        return 2
    return 1 if result.refused else 0


def render_table(rows: Sequence[dict[str, Any]]) -> str:
    """Rows of `tool_invocation` as an aligned plain-text table."""
    cells = [_COLUMNS, *(_cells(row) for row in rows)]
    widths = [max(len(line[i]) for line in cells) for i in range(len(_COLUMNS) - 1)]
    lines = []
    for index, line in enumerate(cells):
        padded = [value.ljust(width) for value, width in zip(line, widths, strict=False)]
        lines.append("  ".join([*padded, line[-1]]).rstrip())
        if index == 0:
            lines.append("  ".join("-" * w for w in [*widths, len(_COLUMNS[-1])]))
    return "\n".join(lines)


def _cells(row: dict[str, Any]) -> tuple[str, ...]:
    status = "ok" if row["success"] else (row["error_code"] or "FAILED")
    counts = "/".join(
        _text(row[k]) for k in ("candidate_count", "evidence_block_count", "returned_count")
    )
    query = " ".join(str(row["query"]).split())
    if len(query) > QUERY_PREVIEW_CHARS:
        query = query[: QUERY_PREVIEW_CHARS - 1] + "…"
    return (
        _time(row["created_at"]),
        str(row["tool_call_id"]),
        str(status),
        _text(row["evidence_status"]),
        _text(row["relevance_level"]),
        counts,
        _flag(row["truncated"]),
        _text(row["duration_ms"]),
        _text(row["upstream_ms"]),
        _flag(row["replayed"]),
        query,
    )


def _time(value: Any) -> str:
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S.") + f"{value.microsecond // 1000:03d}"
    return _text(value)


def _text(value: Any) -> str:
    return "-" if value is None else str(value)


def _flag(value: Any) -> str:
    return "-" if value is None else ("yes" if value else "no")


def _settings() -> Settings:
    return Settings()


def _sqlite_file_exists(database: str | None) -> bool:
    if not database or database == ":memory:" or database.startswith("file:"):
        return True
    return Path(database).expanduser().is_file()


if __name__ == "__main__":
    raise SystemExit(main())
