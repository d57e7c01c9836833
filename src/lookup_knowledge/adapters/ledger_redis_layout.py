"""How the ledger lies in Redis: the keys, and an entry's hash fields (docs/ledger.md#key-layout).

Keys put the run id in a hash tag so that a run's entry keys and its index share one
Redis Cluster slot, which is what lets a Lua script touch both:

    lk:ledger:{<run_id>}:<tool_call_id>   hash: the entry fields, `body` = the response bytes
    lk:ledger-run:{<run_id>}              zset: tool_call_id scored by first-write time (ms)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from lookup_knowledge.domain.errors import InvalidRequest, LedgerUnavailable
from lookup_knowledge.domain.ledger import TOOL_NAME, LedgerEntry, LedgerStatus

# What the run listing shows of an entry: everything but the body.
SUMMARY_FIELDS = (
    "run_id",
    "tool_call_id",
    "tool_name",
    "status",
    "query_sha256",
    "created_at",
    "evidence_status",
    "result_sha256",
    "error",
)


# The hash fields an entry is read back from; HMGET of these (not HGETALL) halves the reply a
# batch read has to parse, and leaves the claim token in the store.
SERVED_FIELDS = (
    b"run_id",
    b"tool_call_id",
    b"tool_name",
    b"status",
    b"query_sha256",
    b"created_at",
    b"evidence_status",
    b"body",
    b"result_sha256",
    b"error",
)


def entry_key(run_id: str, tool_call_id: str) -> str:
    """The entry's key; the run id is the hash tag."""
    return f"lk:ledger:{{{tag(run_id)}}}:{tool_call_id}"


def run_index_key(run_id: str) -> str:
    """The run's index key, in the same cluster slot as the run's entries."""
    return f"lk:ledger-run:{{{tag(run_id)}}}"


def tag(run_id: str) -> str:
    if not run_id or "{" in run_id or "}" in run_id:
        raise InvalidRequest("run_id must be non-empty and contain no braces")
    return run_id


def fields_of(names: Sequence[str], values: Sequence[bytes | None]) -> dict[bytes, bytes]:
    """HMGET's answer as a mapping of the fields that are set ({} for a missing entry)."""
    return {n.encode(): v for n, v in zip(names, values, strict=True) if v is not None}


def pairs(flat: Sequence[bytes]) -> dict[bytes, bytes]:
    return {flat[i]: flat[i + 1] for i in range(0, len(flat), 2)}


def entry_of(fields: Mapping[bytes, bytes]) -> LedgerEntry:
    def text(name: str) -> str | None:
        raw = fields.get(name.encode())
        return raw.decode("utf-8") if raw is not None else None

    status = text("status")
    if status not in set(LedgerStatus):
        # Only the ledger's scripts (ledger_redis_scripts.py) write these keys; anything else is
        # not evidence (fail closed).
        raise LedgerUnavailable("ledger entry in Redis is malformed", details={"status": status})
    return LedgerEntry(
        run_id=text("run_id") or "",
        tool_call_id=text("tool_call_id") or "",
        tool_name=text("tool_name") or TOOL_NAME,
        status=LedgerStatus(status),
        query_sha256=text("query_sha256") or "",
        created_at=text("created_at") or "",
        evidence_status=text("evidence_status"),
        body=fields.get(b"body"),
        result_sha256=text("result_sha256"),
        error=text("error"),
    )
