"""`lookup-knowledge audit show RUN_ID`: a run's calls from the `tool_invocation` table.

Exit status: 0 when the run has rows, 1 when it has none, 2 when the database cannot be read.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

from sqlalchemy import make_url
from sqlalchemy.exc import SQLAlchemyError

from lookup_knowledge.adapters import audit_sql
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
        prog="lookup-knowledge audit show",
        description="Print the tool calls of one agent run from the audit table.",
    )
    parser.add_argument("run_id", help="the run whose calls to list")
    parser.add_argument(
        "--database-url",
        default=None,
        help="audit database (default: AUDIT_DATABASE_URL from the environment or .env)",
    )
    return parser


def main(argv: Sequence[str] | None = None, *, out: TextIO | None = None) -> int:
    args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    out = out or sys.stdout
    url = args.database_url or _configured_url()
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite" and not _sqlite_file_exists(parsed.database):
        print(f"no audit database at {parsed.database}", file=sys.stderr)
        return 2
    engine = audit_sql.create_audit_engine(parsed)
    try:
        rows = audit_sql.fetch_run(engine, args.run_id)
    except SQLAlchemyError as exc:
        shown = engine.url.render_as_string(hide_password=True)
        print(f"cannot read the audit table at {shown}: {_first_line(exc)}", file=sys.stderr)
        return 2
    finally:
        engine.dispose()
    if not rows:
        print(f"no calls recorded for run {args.run_id}", file=out)
        return 1
    print(f"run {args.run_id}: {len(rows)} call(s)", file=out)
    print(render_table(rows), file=out)
    return 0


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


def _configured_url() -> str:
    return Settings().audit_database_url.get_secret_value()


def _sqlite_file_exists(database: str | None) -> bool:
    if not database or database == ":memory:" or database.startswith("file:"):
        return True
    return Path(database).expanduser().is_file()


def _first_line(exc: BaseException) -> str:
    text = str(getattr(exc, "orig", None) or exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


if __name__ == "__main__":
    raise SystemExit(main())
