"""What the audit writer knows of its database, and the AuditStatus /readyz shows of it.

See docs/audit.md#readiness-and-metrics. Written by the writer thread only; read by `status`
from the event loop (plain attributes: a read sees a whole value, if a moment old).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from lookup_knowledge.audit import sql
from lookup_knowledge.audit.sql import Failure
from lookup_knowledge.domain.audit import AuditHealth, AuditStatus

SLOW_CALL_S = 2.0  # a database call running longer makes the audit "degraded"


class DatabaseHealth:
    def __init__(self, *, retry_initial_s: float, retry_max_s: float, stuck_after_s: float) -> None:
        self._retry_initial_s = retry_initial_s
        self._retry_max_s = retry_max_s
        self._stuck_after_s = stuck_after_s
        self.state = "connecting"  # connecting | up | unavailable | misconfigured
        self.error: str | None = None
        self.reached = False  # the schema was checked once since start
        self.call_started: float | None = None
        self.last_progress = time.monotonic()  # rows last acknowledged (or start)
        self.rows_written = 0
        self.commits = 0
        self.rows_quarantined = 0
        self.retry_delay_s = retry_initial_s
        self.next_retry = 0.0

    @property
    def up(self) -> bool:
        return self.state == "up"

    @contextmanager
    def call(self) -> Iterator[None]:
        """Around one database call: since when it runs tells a hang (`writer_stuck`)."""
        self.call_started = time.monotonic()
        try:
            yield
        finally:
            self.call_started = None

    def connected(self) -> bool:
        """The database took the schema check; True when it had been away (worth a log)."""
        was_away = self.state != "connecting" or self.error is not None
        self.state, self.error, self.reached = "up", None, True
        self.retry_delay_s = self._retry_initial_s
        return was_away

    def failed(self, exc: BaseException) -> bool:
        """Away or misconfigured: retry after a backoff that doubles while nothing changes.
        True when this is news (worth a log)."""
        state = "misconfigured" if sql.classify(exc) is Failure.MISCONFIGURED else "unavailable"
        message = sql.brief(exc)
        news = self.state != state or self.error != message
        if not news:
            self.retry_delay_s = min(self.retry_delay_s * 2, self._retry_max_s)
        self.state, self.error = state, message
        self.next_retry = time.monotonic() + self.retry_delay_s
        return news

    def stored(self, rows: int, commits: int = 1) -> None:
        self.rows_written += rows
        self.commits += commits
        self.last_progress = time.monotonic()

    def progressed(self) -> None:
        self.last_progress = time.monotonic()

    def status(
        self,
        *,
        backend: str,
        depth: int,
        oldest_age_s: float | None,
        quarantine_size: int,
        spool_error: str | None,
    ) -> AuditStatus:
        now = time.monotonic()
        since_progress = now - self.last_progress
        stuck = bool(depth) and min(since_progress, oldest_age_s or 0.0) > self._stuck_after_s
        call = self.call_started
        slow = call is not None and now - call > SLOW_CALL_S
        error = self.error
        status: AuditHealth
        if spool_error is not None:
            status, error = "down", f"spool not writable: {spool_error}"
        elif self.state == "misconfigured":
            status, error = "down", f"misconfigured: {error}"
        elif not self.reached:
            status, error = "down", f"not reached since start: {error or 'connecting'}"
        elif not self.up or stuck or slow:
            status = "degraded"
            if self.up and call is not None and slow:
                error = f"a database call has run for {now - call:.1f} s"
            elif self.up:
                error = f"no row written for {since_progress:.1f} s while {depth} wait"
        else:
            status, error = "up", None
        return AuditStatus(
            status=status,
            backend=backend,
            error=error,
            spool_depth=depth,
            oldest_unwritten_age_s=None if oldest_age_s is None else round(oldest_age_s, 3),
            quarantine_size=quarantine_size,
            writer_stuck=stuck,
            rows_written=self.rows_written,
            commits=self.commits,
            rows_quarantined=self.rows_quarantined,
        )
