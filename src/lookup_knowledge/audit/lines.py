"""One audit row as one line of the spool and the quarantine: JSON, newline-terminated.

UTF-8 JSON from orjson; a row orjson refuses (a lone surrogate) is written as ASCII JSON with
`\\uXXXX` escapes instead, so writing a row to the spool never fails for what it holds.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import fields
from datetime import datetime
from typing import Any

import orjson

from lookup_knowledge.domain.audit import AuditRecord

_FIELDS = tuple(f.name for f in fields(AuditRecord))
_FIELD_SET = frozenset(_FIELDS)


def record_dict(record: AuditRecord) -> dict[str, Any]:
    """The record as a shallow dict (no deep copy of `retrieval_details`)."""
    data = {name: getattr(record, name) for name in _FIELDS}
    data["created_at"] = record.created_at.isoformat()
    return data


def encode_record(record: AuditRecord) -> bytes:
    """The record's line. Details that will not encode (a cycle) are replaced, never lost."""
    data = record_dict(record)
    try:  # the hot path: one line per lookup, before its answer
        return orjson.dumps(data, default=str) + b"\n"
    except TypeError:  # a lone surrogate, a key that is not text, nesting past orjson's limit
        pass
    try:
        text = json.dumps(data, ensure_ascii=True, separators=(",", ":"), default=str)
    except (TypeError, ValueError, RecursionError) as exc:
        data["retrieval_details"] = {"details_truncated": True, "error": f"not encodable: {exc}"}
        text = json.dumps(data, ensure_ascii=True, separators=(",", ":"), default=str)
    return text.encode("ascii") + b"\n"


def decode_record(line: bytes) -> AuditRecord:
    """The record of one line; raises ValueError/TypeError/KeyError on a bad line."""
    data = json.loads(line)
    if not isinstance(data, dict):
        raise ValueError("spool line is not a JSON object")
    values = {k: v for k, v in data.items() if k in _FIELD_SET}
    if not values.get("invocation_id"):
        # A line without an id still reaches the table once: its id is derived from its bytes.
        values["invocation_id"] = hashlib.sha256(line.strip()).hexdigest()[:32]
    values["created_at"] = datetime.fromisoformat(values["created_at"])
    return AuditRecord(**values)


def first_created_at(line: bytes) -> float | None:
    """Epoch seconds of a line's `created_at`, or None when it cannot be read."""
    try:
        return decode_record(line).created_at.timestamp()
    except (ValueError, TypeError, KeyError):
        return None
