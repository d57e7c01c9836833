"""One finished report verification, as the guard hands it to its outcome port (docs/guard.md).

Plain data, so that whoever records it (metrics, the log line, the `guard_verification` audit
row of docs/audit.md#guard-verifications) depends on nothing of the guard package.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from lookup_knowledge.domain.ids import random_hex

OUTCOME_OK = "ok"
OUTCOME_VIOLATIONS = "violations"


@dataclass(frozen=True, slots=True)
class GuardViolationRef:
    code: str
    path: str


@dataclass(frozen=True, slots=True)
class GuardOutcome:
    run_id: str
    # "ok", "violations", or the error code that stopped the verification (LEDGER_UNAVAILABLE)
    outcome: str
    violations: tuple[GuardViolationRef, ...] = ()
    analysis_count: int = 0
    citation_count: int = 0
    tool_call_count: int = 0  # distinct cited calls
    ledger_entry_count: int = 0  # of those, how many the run's ledger holds
    snapshot_count: int = 0
    report_sha256: str = ""  # of the parsed report as compact JSON (GuardReport.model_dump_json)
    duration_ms: float = 0.0
    created_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    # Unique per verification: its audit row is inserted at most once (spool replays, retries).
    invocation_id: str = field(default_factory=random_hex)

    @property
    def ok(self) -> bool:
        return self.outcome == OUTCOME_OK

    @property
    def error_code(self) -> str | None:
        """The error that stopped the verification; None when it was judged."""
        return None if self.outcome in (OUTCOME_OK, OUTCOME_VIOLATIONS) else self.outcome


__all__ = ["OUTCOME_OK", "OUTCOME_VIOLATIONS", "GuardOutcome", "GuardViolationRef"]
