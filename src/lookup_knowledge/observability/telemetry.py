"""What each finished lookup tells the operator: metrics and one structured log line."""

from __future__ import annotations

import logging
from collections.abc import Mapping

from lookup_knowledge.domain.audit import AuditRecord
from lookup_knowledge.domain.ledger import sha256_hex
from lookup_knowledge.observability.metrics import Metrics

log = logging.getLogger("lookup_knowledge.lookup")


class LookupTelemetry:
    """Implements `LookupObserver`. Query text is logged only at DEBUG: it may carry customer
    data; INFO lines carry its sha256."""

    def __init__(self, metrics: Metrics | None) -> None:
        self._metrics = metrics

    def lookup_finished(
        self, record: AuditRecord, *, stages: Mapping[str, float], error_kind: str | None
    ) -> None:
        if self._metrics is not None:
            self._metrics.observe_lookup(record, stages, error_kind)
        if not log.isEnabledFor(logging.INFO):
            return
        fields: dict[str, object] = {
            "run_id": record.run_id,
            "tool_call_id": record.tool_call_id,
            "step_id": record.step_id,
            "status": "ok" if record.success else record.error_code,
            "evidence_status": record.evidence_status,
            "relevance_level": record.relevance_level,
            "candidate_count": record.candidate_count,
            "evidence_block_count": record.evidence_block_count,
            "returned_count": record.returned_count,
            "truncated": record.truncated,
            "replayed": record.replayed,
            "duration_ms": record.duration_ms,
            "upstream_ms": record.upstream_ms,
            "stages_ms": {stage: round(s * 1000, 2) for stage, s in stages.items()},
            "query_sha256": sha256_hex(record.query),
        }
        if log.isEnabledFor(logging.DEBUG):
            fields["query"] = record.query
        log.info("lookup %s", fields["status"], extra=fields)
