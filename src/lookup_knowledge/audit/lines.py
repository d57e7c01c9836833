"""One audit row as one line of the spool and the quarantine: JSON, newline-terminated.

UTF-8 JSON from orjson; a row orjson refuses (a lone surrogate) is written as ASCII JSON with
`\\uXXXX` escapes instead, so writing a row to the spool never fails for what it holds. A
report verification's line carries `"table": "guard_verification"`; a line without `table` is a
lookup call's (the only kind older spools hold).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import fields
from datetime import datetime
from typing import Any

import orjson

from lookup_knowledge.domain.audit import AuditRecord, AuditRow
from lookup_knowledge.domain.guard import GuardOutcome, GuardViolationRef

GUARD_TABLE = "guard_verification"
_FIELDS = tuple(f.name for f in fields(AuditRecord))
_FIELD_SET = frozenset(_FIELDS)
_GUARD_FIELDS = tuple(f.name for f in fields(GuardOutcome))
_GUARD_FIELD_SET = frozenset(_GUARD_FIELDS)


def record_dict(record: AuditRow) -> dict[str, Any]:
    """The record as a shallow dict (no deep copy of `retrieval_details`)."""
    if isinstance(record, GuardOutcome):
        data = {name: getattr(record, name) for name in _GUARD_FIELDS}
        data["violations"] = [[v.code, v.path] for v in record.violations]
        data["table"] = GUARD_TABLE
    else:
        data = {name: getattr(record, name) for name in _FIELDS}
    data["created_at"] = record.created_at.isoformat()
    return data


def describe(record: AuditRow) -> str:
    """`run/call` of a lookup's row, `run/guard_verification` of a verification's (for logs)."""
    what = GUARD_TABLE if isinstance(record, GuardOutcome) else record.tool_call_id
    return f"{record.run_id}/{what}"


def encode_record(record: AuditRow) -> bytes:
    """The record's line. Details that will not encode (a cycle) are replaced, never lost."""
    data = record_dict(record)
    try:  # the hot path: one line per lookup, before its answer
        return orjson.dumps(data, default=str) + b"\n"
    except TypeError:  # a lone surrogate, a key that is not text, nesting past orjson's limit
        pass
    try:
        text = json.dumps(data, ensure_ascii=True, separators=(",", ":"), default=str)
    except (TypeError, ValueError, RecursionError) as exc:
        if isinstance(record, GuardOutcome):
            data["violations"] = [["…", f"not encodable: {exc}"]]
        else:
            data["retrieval_details"] = {
                "details_truncated": True,
                "error": f"not encodable: {exc}",
            }
        text = json.dumps(data, ensure_ascii=True, separators=(",", ":"), default=str)
    return text.encode("ascii") + b"\n"


def decode_record(line: bytes) -> AuditRow:
    """The record of one line; raises ValueError/TypeError/KeyError on a bad line."""
    data = json.loads(line)
    if not isinstance(data, dict):
        raise ValueError("spool line is not a JSON object")
    if data.get("table") == GUARD_TABLE:
        return _decode_outcome(data, line)
    values = {k: v for k, v in data.items() if k in _FIELD_SET}
    if not values.get("invocation_id"):
        # A line without an id still reaches the table once: its id is derived from its bytes.
        values["invocation_id"] = hashlib.sha256(line.strip()).hexdigest()[:32]
    values["created_at"] = datetime.fromisoformat(values["created_at"])
    return AuditRecord(**values)


def _decode_outcome(data: dict[str, Any], line: bytes) -> GuardOutcome:
    values = {k: v for k, v in data.items() if k in _GUARD_FIELD_SET}
    if not values.get("invocation_id"):
        values["invocation_id"] = hashlib.sha256(line.strip()).hexdigest()[:32]
    values["created_at"] = datetime.fromisoformat(values["created_at"])
    values["violations"] = tuple(
        GuardViolationRef(code=str(code), path=str(path))
        for code, path in values.get("violations") or ()
    )
    return GuardOutcome(**values)


def first_created_at(line: bytes) -> float | None:
    """Epoch seconds of a line's `created_at`, or None when it cannot be read."""
    try:
        return decode_record(line).created_at.timestamp()
    except (ValueError, TypeError, KeyError):
        return None
