"""The audit trail's rows and state (docs/audit.md).

A row is one lookup call (`AuditRecord`, table `tool_invocation`) or one report verification
(`GuardOutcome`, table `guard_verification`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from lookup_knowledge.domain.guard import GuardOutcome
from lookup_knowledge.domain.ids import random_hex

OUTPUT_PREVIEW_CHARS = 2000
EVIDENCE_REF_TEXT_CHARS = 200


@dataclass(frozen=True, slots=True)
class AuditRecord:
    run_id: str
    tool_call_id: str
    query: str
    success: bool
    step_id: str | None = None
    tool_name: str = "lookup_knowledge"
    error_code: str | None = None
    evidence_status: str | None = None
    relevance_level: str | None = None
    top_quality_score: float | None = None
    candidate_count: int | None = None
    evidence_block_count: int | None = None
    returned_count: int | None = None
    truncated: bool | None = None
    retrieval_layer: str = "py-rag"
    retrieval_details: dict[str, Any] = field(default_factory=dict)
    output_preview: str | None = None
    duration_ms: int = 0
    upstream_ms: int | None = None
    replayed: bool = False
    created_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    # Unique per submitted row: the audit writer inserts it at most once (spool replays, retries).
    invocation_id: str = field(default_factory=random_hex)


# What the audit trail takes: a lookup call's row, or a report verification's.
AuditRow = AuditRecord | GuardOutcome

AuditHealth = Literal["up", "degraded", "down"]


@dataclass(frozen=True, slots=True)
class AuditStatus:
    """What /readyz and /metrics show of the audit trail (docs/audit.md#readiness-and-metrics).

    `up`: rows reach the database. `degraded` (still ready): the database is down, hung or slow,
    rows wait durably in the spool. `down` (not ready): the database has not been reached since
    start, is misconfigured, or the spool cannot be written.
    """

    status: AuditHealth
    backend: str
    error: str | None = None
    spool_depth: int = 0  # rows appended to the spool and not yet acknowledged
    oldest_unwritten_age_s: float | None = None
    quarantine_size: int = 0
    writer_stuck: bool = False
    rows_written: int = 0  # totals since start, for the /metrics counters
    commits: int = 0
    rows_quarantined: int = 0
