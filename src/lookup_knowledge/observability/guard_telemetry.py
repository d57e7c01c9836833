"""What each finished report verification leaves: metrics, one log line, one audit row."""

from __future__ import annotations

import logging
from collections import Counter

from lookup_knowledge.domain.guard import GuardOutcome
from lookup_knowledge.domain.ports import AuditPort
from lookup_knowledge.observability.metrics import Metrics

log = logging.getLogger("lookup_knowledge.guard")


class GuardTelemetry:
    """Implements `GuardOutcomePort`: metrics, the log line, and the `guard_verification` audit
    row (docs/audit.md#guard-verifications), made durable before the answer leaves."""

    def __init__(self, metrics: Metrics | None, audit: AuditPort | None = None) -> None:
        self._metrics = metrics
        self._audit = audit

    def verification_finished(self, outcome: GuardOutcome) -> None:
        if self._audit is not None:
            self._audit.submit(outcome)
        if self._metrics is not None:
            self._metrics.observe_guard(outcome)
        fields: dict[str, object] = {
            "run_id": outcome.run_id,
            "status": outcome.outcome,
            "violation_codes": dict(Counter(v.code for v in outcome.violations)),
            "analysis_count": outcome.analysis_count,
            "citation_count": outcome.citation_count,
            "tool_call_count": outcome.tool_call_count,
            "ledger_entry_count": outcome.ledger_entry_count,
            "snapshot_count": outcome.snapshot_count,
            "report_sha256": outcome.report_sha256,
            "duration_ms": outcome.duration_ms,
        }
        log.info("guard verification %s", outcome.outcome, extra=fields)


__all__ = ["GuardTelemetry"]
