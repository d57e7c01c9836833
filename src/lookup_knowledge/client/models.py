"""What the client returns: the agent contract, ledger entries, run listings (typed).

Answers are parsed from the exact bytes received, never re-serialized: `LookupResponse.body`
and `LedgerEntry.raw` are what a verifier hashes (docs/ledger.md#what-a-verifier-relies-on).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, PrivateAttr

from lookup_knowledge.domain.contract import RagEvidenceItem, RagToolResult

__all__ = [
    "LedgerEntry",
    "LookupResponse",
    "RagEvidenceItem",
    "RagToolResult",
    "RunLedger",
    "ToolOutput",
]


@dataclass(frozen=True, slots=True)
class LookupResponse:
    """One answered lookup: the typed result, its exact bytes and the ids it is ledgered under."""

    result: RagToolResult
    body: bytes
    run_id: str
    tool_call_id: str
    replayed: bool
    attempts: int = 1


@dataclass(frozen=True, slots=True)
class ToolOutput:
    """A model's tool call, answered: `text` goes back to the model as the tool result."""

    text: str  # the answer's exact bytes as text, or the error envelope
    is_error: bool
    response: LookupResponse | None = None


class LedgerEntry(BaseModel):
    """`GET /ledger/{run_id}/{tool_call_id}` (docs/ledger.md#entry); no `result` in listings."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    run_id: str
    tool_call_id: str
    tool_name: str
    status: Literal["PENDING", "READY", "FAILED"]
    evidence_status: Literal["EVIDENCE_FOUND", "NO_EVIDENCE"] | None = None
    result: RagToolResult | None = None
    result_sha256: str | None = None
    query_sha256: str
    created_at: str
    error: str | None = None
    _raw: bytes = PrivateAttr(default=b"")

    @property
    def raw(self) -> bytes:
        """The entry exactly as served, for `lookup_knowledge.guard.verify_citation`."""
        return self._raw

    @classmethod
    def from_bytes(cls, raw: bytes) -> LedgerEntry:
        entry = cls.model_validate_json(raw)
        entry._raw = raw
        return entry


class RunLedger(BaseModel):
    """`GET /ledger/{run_id}`: the run's entries in first-write order, without `result`."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    run_id: str
    entries: list[LedgerEntry]
    next_cursor: str | None = None
