"""The evidence ledger entry: what EvidenceGuard reads to verify a citation (docs/ledger.md)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum

TOOL_NAME = "lookup_knowledge"


class LedgerStatus(StrEnum):
    PENDING = "PENDING"
    READY = "READY"
    FAILED = "FAILED"


def sha256_hex(data: bytes | str) -> str:
    raw = data.encode("utf-8") if isinstance(data, str) else data
    return hashlib.sha256(raw).hexdigest()


def utc_now_iso() -> str:
    """Millisecond UTC timestamp as docs/ledger.md#entry shows it: 2026-11-30T10:00:00.123Z."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    run_id: str
    tool_call_id: str
    status: LedgerStatus
    query_sha256: str
    created_at: str
    tool_name: str = TOOL_NAME
    evidence_status: str | None = None
    body: bytes | None = None  # the exact response bytes; `result` is these bytes as JSON
    result_sha256: str | None = None
    error: str | None = None

    def to_json_bytes(self, *, include_result: bool = True) -> bytes:
        """The entry as served by GET /ledger; `result` embeds the stored bytes verbatim."""
        head = {
            "run_id": self.run_id,
            "tool_call_id": self.tool_call_id,
            "tool_name": self.tool_name,
            "status": self.status.value,
            "evidence_status": self.evidence_status,
        }
        tail = {
            "result_sha256": self.result_sha256,
            "query_sha256": self.query_sha256,
            "created_at": self.created_at,
            "error": self.error,
        }
        parts = [_compact(head)[:-1]]
        if include_result:
            result = self.body.decode("utf-8") if self.body is not None else "null"
            parts.append(f',"result":{result}')
        parts.append("," + _compact(tail)[1:])
        return "".join(parts).encode("utf-8")


# GET /ledger/{run_id}: entries per page, by default and at most (docs/ledger.md#read-routes).
DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 100


@dataclass(frozen=True, slots=True)
class RunPage:
    """One page of a run's entries in first-write order; `body` is None unless asked for.

    `next_cursor` is the tool_call_id to list after for the next page; None on the last page.
    A page may hold fewer entries than asked while more follow: entries that expired before
    their run's index are skipped.
    """

    entries: tuple[LedgerEntry, ...]
    next_cursor: str | None

    def to_json_bytes(self, run_id: str, *, include_result: bool) -> bytes:
        """The listing as served; each entry's `result` embeds the stored bytes verbatim."""
        entries = b",".join(e.to_json_bytes(include_result=include_result) for e in self.entries)
        return b"".join(
            (
                b'{"run_id":',
                _compact(run_id).encode("utf-8"),
                b',"entries":[',
                entries,
                b'],"next_cursor":',
                _compact(self.next_cursor).encode("utf-8"),
                b"}",
            )
        )


def _compact(obj: object) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
