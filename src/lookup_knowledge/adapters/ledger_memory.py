"""In-process evidence ledger: the embedded default when REDIS_URL is unset.

See docs/ledger.md#backends.

It lives in ONE process and is lost on restart: with several workers, a lookup and the
ledger read that verifies it could land in different processes, which is why settings
refuse WORKERS > 1 without Redis. Semantics are those of `RedisLedger`, transition for
transition, so one behaviour suite runs over both.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from itertools import islice

from lookup_knowledge.domain.errors import NotFound
from lookup_knowledge.domain.ledger import (
    LedgerEntry,
    LedgerStatus,
    RunPage,
    sha256_hex,
    utc_now_iso,
)

# Expired entries are dropped lazily on access, and swept at most this often on writes.
_MAX_SWEEP_INTERVAL_S = 60.0


@dataclass(slots=True)
class _Slot:
    entry: LedgerEntry
    token: str  # who wrote it; never served
    expires_at: float


class MemoryLedger:
    """A dict with expiry; transitions hold one asyncio.Lock. Single process only."""

    def __init__(
        self,
        *,
        ttl_s: int,
        pending_ttl_s: int,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._ttl_s = float(ttl_s)
        self._pending_ttl_s = float(pending_ttl_s)
        self._clock = clock
        self._lock = asyncio.Lock()
        # run_id -> tool_call_id -> slot; insertion order is the run listing's order.
        self._runs: dict[str, dict[str, _Slot]] = {}
        self._sweep_interval = min(self._pending_ttl_s, _MAX_SWEEP_INTERVAL_S)
        self._next_sweep = clock() + self._sweep_interval

    async def claim(
        self, run_id: str, tool_call_id: str, *, query_sha256: str, token: str
    ) -> LedgerEntry | None:
        """None when this caller now holds the PENDING claim; else the entry that blocks it."""
        async with self._lock:
            now = self._tick()
            slot = self._live(run_id, tool_call_id, now)
            if slot is not None and slot.entry.status is not LedgerStatus.FAILED:
                if slot.entry.status is LedgerStatus.PENDING and slot.token == token:
                    return None  # a retried claim of the holder
                return slot.entry
            entry = LedgerEntry(
                run_id=run_id,
                tool_call_id=tool_call_id,
                status=LedgerStatus.PENDING,
                query_sha256=query_sha256,
                created_at=utc_now_iso(),
            )
            self._put(entry, token, now + self._pending_ttl_s)
            return None

    async def complete(
        self,
        run_id: str,
        tool_call_id: str,
        *,
        token: str,
        query_sha256: str,
        body: bytes,
        evidence_status: str,
    ) -> bool:
        """Write READY with the exact response bytes; False if another writer got there first."""
        result_sha256 = sha256_hex(body)
        async with self._lock:
            now = self._tick()
            slot = self._live(run_id, tool_call_id, now)
            if slot is not None:
                if slot.entry.status is LedgerStatus.READY:
                    # True only for a retry of the very write that made it READY.
                    return slot.token == token and slot.entry.result_sha256 == result_sha256
                if slot.entry.status is LedgerStatus.PENDING and slot.token != token:
                    return False
            entry = LedgerEntry(
                run_id=run_id,
                tool_call_id=tool_call_id,
                status=LedgerStatus.READY,
                query_sha256=query_sha256,
                created_at=slot.entry.created_at if slot is not None else utc_now_iso(),
                evidence_status=evidence_status,
                body=bytes(body),
                result_sha256=result_sha256,
            )
            self._put(entry, token, now + self._ttl_s)
            return True

    async def fail(
        self, run_id: str, tool_call_id: str, *, token: str, query_sha256: str, error_code: str
    ) -> bool:
        """Write FAILED with the error code; False if the entry is READY or claimed by another."""
        async with self._lock:
            now = self._tick()
            slot = self._live(run_id, tool_call_id, now)
            if slot is not None:
                if slot.entry.status is LedgerStatus.READY:
                    return False
                if slot.entry.status is LedgerStatus.PENDING and slot.token != token:
                    return False
            entry = LedgerEntry(
                run_id=run_id,
                tool_call_id=tool_call_id,
                status=LedgerStatus.FAILED,
                query_sha256=query_sha256,
                created_at=slot.entry.created_at if slot is not None else utc_now_iso(),
                error=error_code,
            )
            self._put(entry, token, now + self._ttl_s)
            return True

    async def get(self, run_id: str, tool_call_id: str) -> LedgerEntry | None:
        """The live entry, or None."""
        slot = self._live(run_id, tool_call_id, self._clock())
        return slot.entry if slot is not None else None

    async def list_run(
        self, run_id: str, *, after: str | None, limit: int, with_bodies: bool
    ) -> RunPage:
        """Up to `limit` live entries after `after`, in the order they were first written."""
        now = self._clock()
        calls = self._runs.get(run_id, {})
        ids = iter(calls)
        if after is not None:
            if after not in calls:
                raise NotFound("cursor is not an entry of this run", details={"cursor": after})
            for call_id in ids:
                if call_id == after:
                    break
        page = list(islice(ids, limit + 1))
        listed = [calls[call_id] for call_id in page[:limit]]
        entries = tuple(
            slot.entry if with_bodies else replace(slot.entry, body=None)
            for slot in listed
            if slot.expires_at > now
        )
        return RunPage(entries=entries, next_cursor=page[limit - 1] if len(page) > limit else None)

    async def ping(self) -> None:
        """Always reachable."""

    async def get_many(self, run_id: str, tool_call_ids: Sequence[str]) -> dict[str, LedgerEntry]:
        """The live entries of these calls, by tool_call_id; unknown ids are absent."""
        now = self._clock()
        found: dict[str, LedgerEntry] = {}
        for tool_call_id in tool_call_ids:
            slot = self._live(run_id, tool_call_id, now)
            if slot is not None:
                found[tool_call_id] = slot.entry
        return found

    async def aclose(self) -> None:
        """Nothing to close; present so both backends share a lifecycle."""

    def _live(self, run_id: str, tool_call_id: str, now: float) -> _Slot | None:
        slot = self._runs.get(run_id, {}).get(tool_call_id)
        if slot is None or slot.expires_at > now:
            return slot
        self._drop(run_id, tool_call_id)
        return None

    def _put(self, entry: LedgerEntry, token: str, expires_at: float) -> None:
        calls = self._runs.setdefault(entry.run_id, {})
        slot = calls.get(entry.tool_call_id)
        if slot is None:
            calls[entry.tool_call_id] = _Slot(entry=entry, token=token, expires_at=expires_at)
        else:  # keep the listing position, as the Redis index keeps its first score
            slot.entry, slot.token, slot.expires_at = entry, token, expires_at

    def _drop(self, run_id: str, tool_call_id: str) -> None:
        calls = self._runs.get(run_id)
        if calls is None:
            return
        calls.pop(tool_call_id, None)
        if not calls:
            del self._runs[run_id]

    def _tick(self) -> float:
        """The current time; sweeps expired entries now and then so memory stays bounded."""
        now = self._clock()
        if now >= self._next_sweep:
            self._next_sweep = now + self._sweep_interval
            expired = [
                (run_id, call_id)
                for run_id, calls in self._runs.items()
                for call_id, slot in calls.items()
                if slot.expires_at <= now
            ]
            for run_id, call_id in expired:
                self._drop(run_id, call_id)
        return now


__all__ = ["MemoryLedger"]
