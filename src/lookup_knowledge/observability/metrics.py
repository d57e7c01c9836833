"""Prometheus metrics, built per app (never at import).

Per process by default. With several workers, `lookup-knowledge serve` points
PROMETHEUS_MULTIPROC_DIR at a fresh directory so that /metrics aggregates every worker
(prometheus-client's multiprocess mode). The live gauges of a worker that is gone (killed,
crashed, or restarted by the process manager) are dropped when /metrics is read, so a dead
worker's running lookups never count.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
)

from lookup_knowledge.domain.audit import AuditRecord, AuditStatus
from lookup_knowledge.domain.guard import GuardOutcome

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
STAGES = ("pyrag", "pipeline", "ledger", "audit")


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.http_requests = Counter(
            "lk_http_requests",
            "HTTP requests by route and status",
            ["method", "route", "status"],
            registry=r,
        )
        self.http_latency = Histogram(
            "lk_http_request_duration_seconds",
            "HTTP request latency by route",
            ["method", "route"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.lookup_latency = Histogram(
            "lk_lookup_duration_seconds",
            "Whole lookup latency",
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.stage_latency = Histogram(
            "lk_lookup_stage_duration_seconds",
            "Lookup latency per stage",
            ["stage"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.lookups = Counter(
            "lk_lookups",
            "Lookups by outcome (ok or the error code)",
            ["outcome"],
            registry=r,
        )
        self.evidence_status = Counter(
            "lk_lookup_evidence_status",
            "Answered lookups by evidence_status",
            ["evidence_status"],
            registry=r,
        )
        self.relevance_level = Counter(
            "lk_lookup_relevance_level",
            "Answered lookups by relevance_level (NONE if absent)",
            ["relevance_level"],
            registry=r,
        )
        self.truncated = Counter(
            "lk_lookup_truncated",
            "Answered lookups by truncated flag",
            ["truncated"],
            registry=r,
        )
        self.pyrag_errors = Counter(
            "lk_pyrag_errors",
            "py-rag failures by kind",
            ["kind"],
            registry=r,
        )
        self.ledger_conflicts = Counter(
            "lk_ledger_conflicts",
            "Lookups refused with 409 CONFLICT",
            registry=r,
        )
        self.ledger_replays = Counter(
            "lk_ledger_replays",
            "Lookups answered from the ledger (replays)",
            registry=r,
        )
        self.guard_verifications = Counter(
            "lk_guard_verifications",
            "Report verifications by outcome (ok, violations, or the error code)",
            ["outcome"],
            registry=r,
        )
        self.guard_violations = Counter(
            "lk_guard_violations",
            "Violations found in verified reports, by code",
            ["code"],
            registry=r,
        )
        self.guard_latency = Histogram(
            "lk_guard_duration_seconds",
            "Whole report verification latency (ledger read included)",
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.lookups_running = Gauge(
            "lk_lookups_running",
            "Lookups admitted and running (MAX_CONCURRENT_LOOKUPS at most)",
            registry=r,
            multiprocess_mode="livesum",
        )
        self.lookups_waiting = Gauge(
            "lk_lookups_waiting",
            "Lookups waiting for a slot (LOOKUP_QUEUE_MAX at most)",
            registry=r,
            multiprocess_mode="livesum",
        )
        self.lookups_refused = Counter(
            "lk_lookups_refused",
            "Lookups refused with 503 OVERLOADED before the ledger, by reason",
            ["reason"],
            registry=r,
        )
        # The audit trail (docs/audit.md#readiness-and-metrics), set from its state at scrape.
        self.audit_spool_depth = Gauge(
            "lk_audit_spool_depth",
            "Audit rows in the local spool not yet in the database",
            registry=r,
            multiprocess_mode="livesum",
        )
        self.audit_oldest_age = Gauge(
            "lk_audit_oldest_unwritten_age_seconds",
            "Age of the oldest audit row not yet in the database (0 when none waits)",
            registry=r,
            multiprocess_mode="livemax",
        )
        self.audit_quarantine = Gauge(
            "lk_audit_quarantine_rows",
            "Audit rows the database refused, kept in the quarantine",
            registry=r,
            multiprocess_mode="livemax",
        )
        self.audit_writer_stuck = Gauge(
            "lk_audit_writer_stuck",
            "1 when audit rows wait and none was written for AUDIT_WRITER_STUCK_S",
            registry=r,
            multiprocess_mode="livemax",
        )
        self.audit_rows_written = Counter(
            "lk_audit_rows_written", "Audit rows written to the database", registry=r
        )
        self.audit_commits = Counter(
            "lk_audit_commits", "Audit database commits (rows per commit: their ratio)", registry=r
        )
        self.audit_rows_quarantined = Counter(
            "lk_audit_rows_quarantined", "Audit rows set aside in the quarantine", registry=r
        )
        self._audit_totals = (0, 0, 0)
        self._children: dict[tuple[Any, ...], Any] = {}

    def _child(self, metric: Any, *labels: str) -> Any:
        """`metric.labels(*labels)`, looked up once: a labelled child, once made, stays for the
        life of the process (nothing here removes one), and each look-up takes the metric's
        lock and builds its key again, a microsecond or so, several times a lookup."""
        key = (id(metric), *labels)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*labels)
        return child

    def admission_changed(self, *, running: int, waiting: int) -> None:
        self.lookups_running.set(running)
        self.lookups_waiting.set(waiting)

    def admission_refused(self, reason: str) -> None:
        self._child(self.lookups_refused, reason).inc()

    def observe_request(self, method: str, route: str, status: int, seconds: float) -> None:
        self._child(self.http_requests, method, route, str(status)).inc()
        self._child(self.http_latency, method, route).observe(seconds)

    def observe_lookup(
        self, record: AuditRecord, stages: Mapping[str, float], error_kind: str | None
    ) -> None:
        self.lookup_latency.observe(record.duration_ms / 1000)
        for stage, seconds in stages.items():
            self._child(self.stage_latency, stage).observe(seconds)
        self._child(self.lookups, "ok" if record.success else (record.error_code or "error")).inc()
        if record.success:
            self._child(self.evidence_status, record.evidence_status or "UNKNOWN").inc()
            self._child(self.relevance_level, record.relevance_level or "NONE").inc()
            self._child(self.truncated, "true" if record.truncated else "false").inc()
        if record.replayed:
            self.ledger_replays.inc()
        if record.error_code == "CONFLICT":
            self.ledger_conflicts.inc()
        if error_kind is not None:
            self.pyrag_errors.labels(error_kind).inc()

    def observe_guard(self, outcome: GuardOutcome) -> None:
        self.guard_verifications.labels(outcome.outcome).inc()
        self.guard_latency.observe(outcome.duration_ms / 1000)
        for found in outcome.violations:
            self.guard_violations.labels(found.code).inc()

    def observe_audit(self, audit: AuditStatus) -> None:
        """Gauges from the audit trail's state; counters advanced by what it did since."""
        self.audit_spool_depth.set(audit.spool_depth)
        self.audit_oldest_age.set(audit.oldest_unwritten_age_s or 0.0)
        self.audit_quarantine.set(audit.quarantine_size)
        self.audit_writer_stuck.set(1 if audit.writer_stuck else 0)
        totals = (audit.rows_written, audit.commits, audit.rows_quarantined)
        counters = (self.audit_rows_written, self.audit_commits, self.audit_rows_quarantined)
        for counter, now, before in zip(counters, totals, self._audit_totals, strict=True):
            if now > before:
                counter.inc(now - before)
        self._audit_totals = totals

    def render(self, *, audit: AuditStatus | None = None) -> bytes:
        """The exposition text; aggregates all workers in multiprocess mode."""
        if audit is not None:
            self.observe_audit(audit)
        directory = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
        if directory:
            forget_dead_workers(directory)
            registry = CollectorRegistry()
            multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
            return generate_latest(registry)
        return generate_latest(self.registry)


def forget_dead_workers(directory: str) -> list[int]:
    """Drop the live gauges (`livesum`, `livemax`) of processes that no longer run, as
    prometheus-client's `mark_process_dead` does; returns their pids."""
    pids = set()
    for path in Path(directory).glob("gauge_live*_*.db"):
        suffix = path.stem.rsplit("_", 1)[-1]
        if suffix.isdigit():
            pids.add(int(suffix))
    dead = sorted(pid for pid in pids if not _running(pid))
    for pid in dead:
        multiprocess.mark_process_dead(pid, directory)  # type: ignore[no-untyped-call]
    return dead


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it runs, as another user
    return True
