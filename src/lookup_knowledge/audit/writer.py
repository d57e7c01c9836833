"""The AuditPort: every row into the spool before the answer, a thread writes them on.

    submit() ─write()─▶ spool segment ─(group fsync)─▶ disk
                             └─ take ─▶ writer thread ─batch, one commit─▶ database ─▶ ack
                                              └─ refused row ─▶ quarantine ─▶ ack

See docs/audit.md#durability. PyMySQL is synchronous, so nothing here touches the database on
the event loop: `submit` only appends a line, and `status` reads the writer's state.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import TypedDict, Unpack

from sqlalchemy import Engine

from lookup_knowledge.audit import schema, sql
from lookup_knowledge.audit.gil import lower_this_thread
from lookup_knowledge.audit.health import SLOW_CALL_S, DatabaseHealth
from lookup_knowledge.audit.lines import describe
from lookup_knowledge.audit.quarantine import Quarantine
from lookup_knowledge.audit.spool import Batch, Spool
from lookup_knowledge.audit.sql import Failure
from lookup_knowledge.domain.audit import AuditRow, AuditStatus

log = logging.getLogger(__name__)

BATCH_ROWS = 500
BATCH_WAIT_S = 0.25  # a batch fills for at most this long: fewer commits; rows are durable
ROW_ATTEMPTS = 3  # a row that loses the connection while pings succeed: then quarantined
STOP_STALL_S = 2.0  # at close, stop waiting after this long without progress


class WriterOptions(TypedDict, total=False):
    """The writer's tuning, as `AuditWriter.open` passes it on (defaults: `AuditWriter`)."""

    batch_rows: int
    batch_wait_s: float
    retry_initial_s: float
    retry_max_s: float
    stuck_after_s: float
    idle_ping_s: float
    orphan_check_s: float


class AuditWriter:
    """Implements `AuditPort`. Build with `open`, then `start`; `close` at shutdown."""

    def __init__(
        self,
        engine: Engine,
        spool: Spool,
        quarantine: Quarantine,
        *,
        batch_rows: int = BATCH_ROWS,
        batch_wait_s: float = BATCH_WAIT_S,
        retry_initial_s: float = 0.5,
        retry_max_s: float = 30.0,
        stuck_after_s: float = 15.0,
        idle_ping_s: float = 5.0,
        orphan_check_s: float = 60.0,
        thread_nice: int = 0,
    ) -> None:
        self._engine = engine
        self._spool = spool
        self._quarantine = quarantine
        self._batch_rows = batch_rows
        self._batch_wait_s = batch_wait_s
        self._idle_ping_s = idle_ping_s
        self._orphan_check_s = orphan_check_s
        self._thread_nice = thread_nice  # the writer thread's, above the process's (gil.py)
        self._held: deque[AuditRow] = deque()  # rows the spool could not take
        self._lock = threading.Lock()
        self._closed = False
        self._stopping = threading.Event()
        self._first_attempt = threading.Event()
        self._thread: threading.Thread | None = None
        self._health = DatabaseHealth(
            retry_initial_s=retry_initial_s, retry_max_s=retry_max_s, stuck_after_s=stuck_after_s
        )

    @classmethod
    def open(
        cls,
        database_url: str,
        spool_dir: Path,
        *,
        timeout_s: float = 10,
        fsync_interval_s: float = 0.05,
        thread_nice: int = 0,
        details_max_depth: int = sql.DETAILS_MAX_DEPTH,
        details_max_bytes: int = sql.DETAILS_MAX_BYTES,
        **options: Unpack[WriterOptions],
    ) -> AuditWriter:
        """Engine, spool (adopting what a stopped process left) and quarantine; touches no
        database: that happens in the thread."""
        engine = sql.create_audit_engine(
            database_url,
            timeout_s=timeout_s,
            details_max_depth=details_max_depth,
            details_max_bytes=details_max_bytes,
        )
        spool = Spool(spool_dir, fsync_interval_s=fsync_interval_s, thread_nice=thread_nice)
        quarantine = Quarantine(spool_dir)
        return cls(
            engine,
            spool,
            quarantine,
            thread_nice=thread_nice,
            **options,
        )

    @property
    def engine(self) -> Engine:
        return self._engine

    @property
    def spool(self) -> Spool:
        return self._spool

    def start(self) -> None:
        """Start the syncer and the writer thread (schema check, adopted rows first, then new)."""
        with self._lock:
            if self._thread is not None or self._closed:
                return
            self._spool.start()
            self._thread = threading.Thread(target=self._run, name="audit-writer", daemon=True)
            self._thread.start()
        atexit.register(self._close_at_exit)  # daemon threads die silently at exit

    # --- AuditPort ---

    def submit(self, record: AuditRow) -> None:
        """Append the row to the spool; returns once the kernel has it. Never raises."""
        try:
            self._spool.append(record)
            return
        except Exception:
            log.exception("audit row %s not spooled; kept in memory", record.invocation_id)
        self._held.append(record)
        self._spool.interrupt()

    async def status(self) -> AuditStatus:
        if not self._first_attempt.is_set():  # at start, let the first connection settle
            await asyncio.to_thread(self._first_attempt.wait, SLOW_CALL_S)
        return self.snapshot()

    def snapshot(self) -> AuditStatus:
        return self._health.status(
            backend=self._engine.dialect.name,
            depth=self.depth(),
            oldest_age_s=self._spool.oldest_age(),
            quarantine_size=self._quarantine.size(),
            spool_error=self._spool.error,
        )

    # --- lifecycle ---

    def depth(self) -> int:
        """Rows not yet in the database or the quarantine."""
        return self._spool.depth() + len(self._held)

    def flush(self, timeout: float) -> bool:
        """Write now what waits, and wait until it is stored (for tests and benchmarks)."""
        deadline = time.monotonic() + timeout
        while self.depth():
            if time.monotonic() >= deadline:
                return False
            self._spool.interrupt()  # no waiting for a batch to fill
            time.sleep(0.01)
        return True

    def close(self, timeout: float = 10.0) -> None:
        """Write what the database takes within `timeout` (stopping early when it is away or
        makes no progress), then stop. The rest waits in the spool for the next start."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            thread = self._thread
        atexit.unregister(self._close_at_exit)
        self._stopping.set()
        self._spool.interrupt()
        began = time.monotonic()
        while thread is not None and thread.is_alive() and time.monotonic() < began + timeout:
            stalled = time.monotonic() - max(self._health.last_progress, began) > STOP_STALL_S
            if self._health.call_started and stalled:
                break  # blocked in a hung database: the rows are on disk already
            thread.join(0.05)
        alive = thread is not None and thread.is_alive()
        left = self.depth()
        if left:
            log.warning("audit: %d rows left in the spool for the next start", left)
        if self._held:
            log.error("audit: %d rows held in memory are lost at close", len(self._held))
        self._spool.close(keep_open=alive)
        if not alive:
            self._engine.dispose()

    async def aclose(self, timeout: float = 10.0) -> None:
        """`close` without blocking the event loop."""
        await asyncio.to_thread(self.close, timeout)

    def _close_at_exit(self) -> None:
        self.close(timeout=5.0)

    # --- the writer thread ---

    def _run(self) -> None:
        lower_this_thread(self._thread_nice)
        next_orphan_check = time.monotonic() + self._orphan_check_s
        last_contact = time.monotonic()
        while True:
            try:
                if self._stopping.is_set() and (not self._health.up or not self.depth()):
                    return
                now = time.monotonic()
                if not self._health.up:
                    if now < self._health.next_retry:
                        self._spool.wait(self._health.next_retry - now)
                        continue
                    self._connect()
                    last_contact = time.monotonic()
                    continue
                if now >= next_orphan_check:
                    next_orphan_check = now + self._orphan_check_s
                    self._spool.adopt_orphans()
                if self._held:
                    self._write_held()
                    continue
                batch = self._spool.take(self._batch_rows)
                if batch is None:
                    if now - last_contact > self._idle_ping_s:
                        self._ping_idle()
                        last_contact = time.monotonic()
                    else:
                        self._spool.wait(min(1.0, self._idle_ping_s))
                        if not self._stopping.is_set():
                            self._spool.wait(self._batch_wait_s, rows=self._batch_rows)
                    continue
                self._write(batch)
                last_contact = time.monotonic()
            except Exception as exc:  # the thread must outlive any surprise
                log.exception("audit writer error")
                self._failed(exc)

    def _connect(self) -> None:
        """Create or upgrade the table and check it can take rows."""
        try:
            self._call(schema.ensure_schema, self._engine)
            self._call(schema.check_compatible, self._engine)
        except Exception as exc:
            self._failed(exc)
        else:
            if self._health.connected():
                log.warning("audit database reachable again: writing %d waiting rows", self.depth())
        finally:
            self._first_attempt.set()

    def _write(self, batch: Batch) -> None:
        if not batch.records:  # only undecodable lines, kept aside by the spool
            self._spool.ack(batch)
            return
        for attempt in (1, 2):
            try:
                self._call(sql.insert_records, self._engine, batch.records)
            except Exception as exc:
                kind = sql.classify(exc)
                if kind is Failure.UNAVAILABLE and self._reachable():
                    if attempt == 1:
                        continue  # a pooled connection the database had dropped: once more
                    self._write_one_by_one(batch, exc)  # one row may be what breaks it
                elif kind is Failure.ROW:
                    self._write_one_by_one(batch, exc)
                else:
                    self._failed(exc)
                return
            self._stored(batch, len(batch.records))
            return

    def _write_one_by_one(self, batch: Batch, batch_error: BaseException) -> None:
        """One bad row never takes the others with it: find it, keep it aside, write the rest."""
        log.warning(
            "audit batch of %d failed (%s): retrying row by row",
            len(batch.records),
            sql.brief(batch_error),
        )
        for index, record in enumerate(batch.records):
            if self._write_row(record) is None:  # the database is the problem: the rest waits
                self._spool.ack(batch, index)
                return
        self._spool.ack(batch)
        self._health.progressed()

    def _write_row(self, record: AuditRow) -> bool | None:
        """True: written. False: quarantined, as the database will not take it. None: the
        database is away (the row waits; it is never quarantined for an outage)."""
        for _ in range(ROW_ATTEMPTS):
            try:
                self._call(sql.insert_records, self._engine, [record])
            except Exception as exc:
                kind = sql.classify(exc)
                if kind is Failure.ROW:
                    return self._quarantine_row(record, sql.brief(exc))
                if kind is Failure.MISCONFIGURED or not self._reachable():
                    self._failed(exc)
                    return None
                error = exc  # lost the connection, yet the database answers: this row again
            else:
                self._health.stored(1)
                return True
        reason = f"{sql.brief(error)} ({ROW_ATTEMPTS} times, while the database answered pings)"
        return self._quarantine_row(record, reason)

    def _quarantine_row(self, record: AuditRow, reason: str) -> bool | None:
        log.error(
            "audit row %s (%s) refused by the database, quarantined: %s",
            record.invocation_id,
            describe(record),
            reason,
        )
        try:
            if self._quarantine.add(record, reason):
                self._health.rows_quarantined += 1
        except OSError as exc:
            self._failed(exc)
            return None
        return False

    def _write_held(self) -> None:
        """Rows the spool could not take go straight to the database, one batch at a time."""
        records = [self._held[i] for i in range(min(len(self._held), self._batch_rows))]
        try:
            self._call(sql.insert_records, self._engine, records)
        except Exception as exc:
            self._failed(exc)
            return
        for _ in records:
            self._held.popleft()
        self._health.stored(len(records))

    def _stored(self, batch: Batch, rows: int) -> None:
        self._spool.ack(batch)
        self._health.stored(rows)

    def _ping_idle(self) -> None:
        """While no rows come, still notice a database that went away (for /readyz)."""
        try:
            self._call(sql.ping, self._engine)
        except Exception as exc:
            self._failed(exc)

    def _reachable(self) -> bool:
        try:
            self._call(sql.ping, self._engine)
        except Exception:
            return False
        return True

    def _call(self, function: Callable[..., object], *args: object) -> None:
        with self._health.call():
            function(*args)

    def _failed(self, exc: BaseException) -> None:
        """The database is away or misconfigured: rows wait in the spool; retry with backoff."""
        if self._health.failed(exc):
            log.warning(
                "audit database %s (%s): %d rows wait in %s",
                self._health.state,
                self._health.error,
                self.depth(),
                self._spool.directory,
            )
