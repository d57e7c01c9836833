"""Small ports the service talks to; adapters implement them, tests may fake them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

from lookup_knowledge.domain.audit import AuditRecord, AuditRow, AuditStatus
from lookup_knowledge.domain.guard import GuardOutcome
from lookup_knowledge.domain.ledger import LedgerEntry, RunPage
from lookup_knowledge.domain.models import SearchOutcome


class SearchPort(Protocol):
    """py-rag, seen through the anti-corruption layer."""

    async def search(self, query: str, *, filters: Mapping[str, str] | None) -> SearchOutcome:
        """One attempt; raises UpstreamError / UpstreamTimeout."""
        ...

    async def ping(self) -> None:
        """A cheap reachability check for /readyz; raises UpstreamError."""
        ...


@runtime_checkable
class CategorySource(Protocol):
    """A search port that can also list the values of the `category` filter (optional)."""

    async def categories(self) -> list[str] | None:
        """Sorted category names, or None when the upstream does not say."""
        ...


class LedgerPort(Protocol):
    """The evidence ledger (docs/ledger.md). Every method raises LedgerUnavailable on failure.

    Transitions are atomic in the store, never read-then-write in Python:
      claim:    absent or FAILED -> PENDING(token, ttl=pending_ttl); else the existing entry
      complete: PENDING(same token) or absent -> READY(ttl); READY is never overwritten
      fail:     PENDING(same token) or absent -> FAILED(ttl); READY is never overwritten
    """

    async def claim(
        self, run_id: str, tool_call_id: str, *, query_sha256: str, token: str
    ) -> LedgerEntry | None:
        """None when this caller now holds the PENDING claim; else the entry that blocks it."""
        ...

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
        ...

    async def fail(
        self, run_id: str, tool_call_id: str, *, token: str, query_sha256: str, error_code: str
    ) -> bool:
        """Write FAILED with the error code; False if the entry is READY or claimed by another."""
        ...

    async def get(self, run_id: str, tool_call_id: str) -> LedgerEntry | None: ...

    async def list_run(
        self, run_id: str, *, after: str | None, limit: int, with_bodies: bool
    ) -> RunPage:
        """Up to `limit` live entries after the entry `after` (None: from the first), in
        first-write order; bodies only `with_bodies`. Raises NotFound for an `after` that is
        not an entry of the run."""
        ...

    async def ping(self) -> None: ...

    async def get_many(self, run_id: str, tool_call_ids: Sequence[str]) -> dict[str, LedgerEntry]:
        """The run's live entries for these calls, by tool_call_id, in one store round trip.

        Unknown or expired ids are simply absent from the answer (docs/ledger.md#batch-read).
        """
        ...


class AuditPort(Protocol):
    """The audit trail (docs/audit.md): never fails a lookup, never loses an answered row."""

    def submit(self, record: AuditRow) -> None:
        """Make the row durable locally (the spool), then return; never raises.

        Called before the answer leaves, so a process killed after answering keeps the row. A
        lookup's row goes to `tool_invocation`, a report verification's to `guard_verification`.
        """
        ...

    async def status(self) -> AuditStatus:
        """The trail's state for /readyz and /metrics; never waits on the database itself."""
        ...


class LookupObserver(Protocol):
    """Told about every finished lookup (metrics, the structured log line)."""

    def lookup_finished(
        self, record: AuditRecord, *, stages: Mapping[str, float], error_kind: str | None
    ) -> None: ...


class GuardOutcomePort(Protocol):
    """Told about every finished report verification (docs/guard.md#outcomes).

    Called once per verification, answered or stopped by an error. It must neither block the
    event loop nor raise: a verification never fails for its record.
    """

    def verification_finished(self, outcome: GuardOutcome) -> None: ...
