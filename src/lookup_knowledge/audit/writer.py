"""The AuditPort: one background thread writes batched rows; while the database is away, the spool.

    submit() ─queue─▶ writer thread ─batch─▶ database (insert, skip known invocation ids)
                                  └─ unreachable ─▶ spool (fsync'd) ─ retry, backoff ─▶ replay

PyMySQL is synchronous, so nothing here runs on the event loop: `submit` only enqueues and
`ping` runs in a worker thread. Order is kept: once one row has gone to the spool, every later
row goes there too until the spool has been replayed, and a restart replays leftover segments
before writing anything new. A clean `close` writes (or spools) everything submitted before it.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import queue
import threading
import time
from pathlib import Path
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError

from lookup_knowledge.adapters import audit_sql
from lookup_knowledge.adapters.audit_spool import REJECTED_FILE, AuditSpool
from lookup_knowledge.domain.audit import AuditRecord

log = logging.getLogger(__name__)

_STOP = object()


class AuditWriter:
    """Implements `AuditPort`. Build with `open`, then `start`; `close` at shutdown."""

    def __init__(
        self,
        engine: Engine,
        spool: AuditSpool,
        *,
        batch_size: int = 200,
        retry_initial_s: float = 0.5,
        retry_max_s: float = 30.0,
        orphan_check_s: float = 60.0,
    ) -> None:
        self._engine = engine
        self._spool = spool
        self._batch_size = batch_size
        self._retry_initial_s = retry_initial_s
        self._retry_max_s = retry_max_s
        self._orphan_check_s = orphan_check_s
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._state_lock = threading.Lock()
        self._pending = 0  # submitted, not yet in the database or the spool
        self._closed = False
        self._thread: threading.Thread | None = None
        # Owned by the writer thread (read elsewhere only as hints):
        self._spooling = False
        self._schema_ready = False
        self._retry_delay_s = retry_initial_s
        self._next_retry = 0.0
        self._next_orphan_check = 0.0
        self._inflight: list[AuditRecord] = []
        self._held: list[AuditRecord] = []  # neither spool nor database took them (disk error)

    @classmethod
    def open(
        cls,
        database_url: str,
        spool_dir: Path,
        *,
        batch_size: int = 200,
        retry_initial_s: float = 0.5,
        retry_max_s: float = 30.0,
        connect_timeout_s: int = 5,
        io_timeout_s: int = 30,
    ) -> AuditWriter:
        """Engine + spool; touches no database (that happens in the thread, so start-up never
        waits on or fails because of the audit database)."""
        engine = audit_sql.create_audit_engine(
            database_url, connect_timeout_s=connect_timeout_s, io_timeout_s=io_timeout_s
        )
        spool = AuditSpool(spool_dir, batch_size=batch_size)
        return cls(
            engine,
            spool,
            batch_size=batch_size,
            retry_initial_s=retry_initial_s,
            retry_max_s=retry_max_s,
        )

    @property
    def engine(self) -> Engine:
        return self._engine

    @property
    def spooling(self) -> bool:
        """Whether rows are currently going to the spool (database unreachable)."""
        return self._spooling

    def start(self) -> None:
        """Start the writer thread: it creates/upgrades the schema, replays the spool, writes."""
        with self._state_lock:
            if self._thread is not None or self._closed:
                return
            self._thread = threading.Thread(target=self._run, name="audit-writer", daemon=True)
            self._thread.start()
        # A process that exits without `close` still flushes (daemon threads die silently).
        atexit.register(self._close_at_exit)

    # --- AuditPort ---

    def submit(self, record: AuditRecord) -> None:
        """Queue one row; returns at once, never raises."""
        try:
            with self._state_lock:
                if not self._closed:
                    self._pending += 1
                    self._queue.put(record)
                    return
            # After close: straight to the spool, replayed at the next start.
            log.warning("audit row submitted after close; spooled")
            self._spool.append([record])
            self._spool.close()
        except Exception:
            log.exception(
                "audit row for %s/%s could not be queued", record.run_id, record.tool_call_id
            )

    def spool_depth(self) -> int:
        return self._spool.depth() + len(self._held)

    async def ping(self) -> None:
        await asyncio.to_thread(audit_sql.ping, self._engine)

    # --- lifecycle ---

    def pending(self) -> int:
        """Rows submitted and not yet in the database or the spool."""
        with self._state_lock:
            return self._pending

    def flush(self, timeout: float) -> bool:
        """Wait until every submitted row is in the database (queue empty, spool drained)."""
        deadline = time.monotonic() + timeout
        while True:
            if self.pending() == 0 and not self._spooling and self.spool_depth() == 0:
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.01)

    def close(self, timeout: float = 10.0) -> None:
        """Write (or spool) everything submitted so far, then stop. Idempotent."""
        with self._state_lock:
            if self._closed:
                return
            self._closed = True
            self._queue.put(_STOP)
            thread = self._thread
        atexit.unregister(self._close_at_exit)
        if thread is not None:
            thread.join(timeout)
        if thread is not None and thread.is_alive():
            # Stuck in a database call: spool what it holds too. If its insert does finish
            # after all, the replay skips those rows by invocation id.
            log.error("audit writer still busy after %.1fs; spooling what is left", timeout)
            self._spool_leftovers(list(self._inflight))
        else:
            self._spool_leftovers([])
            self._spool.close()
            self._engine.dispose()

    async def aclose(self, timeout: float = 10.0) -> None:
        """`close` without blocking the event loop."""
        await asyncio.to_thread(self.close, timeout)

    def _close_at_exit(self) -> None:
        self.close(timeout=5.0)

    def _spool_leftovers(self, extra: list[AuditRecord]) -> None:
        rows = [*self._held, *extra]
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is not _STOP:
                rows.append(item)
        if not rows:
            return
        try:
            self._spool.append(rows)
        except OSError:
            log.exception("audit: %d rows could not be spooled at close and are lost", len(rows))
        else:
            log.warning(
                "audit: %d rows spooled at close (%d waiting)", len(rows), self._spool.depth()
            )

    # --- the writer thread ---

    def _run(self) -> None:
        # Leftovers of an earlier process go first: new rows wait behind them.
        self._spooling = self._spool.depth() > 0
        self._recover()
        stop = False
        while not stop:
            try:
                batch, stop = self._take()
                if batch:
                    self._handle(batch)
                now = time.monotonic()
                if self._spooling and now >= self._next_retry:
                    self._recover()
                elif not self._spooling and now >= self._next_orphan_check:
                    self._next_orphan_check = now + self._orphan_check_s
                    if self._spool.has_unowned_segments():  # a sibling process died
                        self._recover()
            except Exception:  # the thread must outlive any surprise
                log.exception("audit writer loop error")
                time.sleep(0.1)
        if self._held:
            self._to_spool([])

    def _take(self) -> tuple[list[AuditRecord], bool]:
        wake_at = self._next_retry if self._spooling else self._next_orphan_check
        try:
            first = self._queue.get(timeout=max(0.0, wake_at - time.monotonic()))
        except queue.Empty:
            return [], False
        if first is _STOP:
            return [], True
        batch: list[AuditRecord] = [first]
        while len(batch) < self._batch_size:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is _STOP:
                return batch, True
            batch.append(item)
        return batch, False

    def _handle(self, batch: list[AuditRecord]) -> None:
        self._inflight = batch
        try:
            if self._spooling:
                self._to_spool(batch)
            else:
                try:
                    self._write(batch)
                except Exception as exc:
                    self._enter_spooling(exc)
                    self._to_spool(batch)
        finally:
            self._inflight = []
            with self._state_lock:
                self._pending -= len(batch)

    def _write(self, records: list[AuditRecord]) -> None:
        """Insert a batch; a row the database refuses goes to `rejected.jsonl`, not in a loop.

        Raises when the database is unavailable (the caller spools and retries later).
        """
        try:
            audit_sql.insert_records(self._engine, records)
            return
        except Exception as exc:
            if not audit_sql.is_row_error(exc):
                raise
        for record in records:  # find the refused row(s); the rest go in one by one
            try:
                audit_sql.insert_records(self._engine, [record])
            except Exception as exc:
                if not audit_sql.is_row_error(exc):
                    raise
                log.error(
                    "audit row %s (%s/%s) refused by the database, kept in %s: %s",
                    record.invocation_id,
                    record.run_id,
                    record.tool_call_id,
                    self._spool.directory / REJECTED_FILE,
                    _brief(exc),
                )
                self._spool.reject(record, _brief(exc))

    def _to_spool(self, batch: list[AuditRecord]) -> None:
        rows = [*self._held, *batch]
        try:
            self._spool.append(rows)
        except OSError as exc:
            self._held = rows
            log.error("audit spool unwritable (%s): %d rows held in memory", exc, len(rows))
        else:
            self._held = []

    def _recover(self) -> None:
        """Make sure of the schema, replay the spool, then write directly again."""
        was_spooling = self._spooling
        try:
            if not self._schema_ready:
                audit_sql.ensure_schema(self._engine)
                self._schema_ready = True
            else:
                audit_sql.ping(self._engine)
            replayed = self._spool.replay(self._write)
            if self._held:
                self._write(self._held)
                self._held = []
        except Exception as exc:
            self._enter_spooling(exc)
            return
        self._spooling = False
        self._retry_delay_s = self._retry_initial_s
        self._next_orphan_check = time.monotonic() + self._orphan_check_s
        if was_spooling or replayed:
            log.warning(
                "audit database reachable: %d spooled rows written, spool drained", replayed
            )

    def _enter_spooling(self, exc: BaseException) -> None:
        self._schema_ready = False  # e.g. "no such table": re-check before the next write
        if not self._spooling:
            self._spooling = True
            self._retry_delay_s = self._retry_initial_s
            log.warning(
                "audit database unreachable (%s): spooling rows to %s (%d waiting)",
                _brief(exc),
                self._spool.directory,
                self.spool_depth(),
            )
        else:
            self._retry_delay_s = min(self._retry_delay_s * 2, self._retry_max_s)
            log.warning(
                "audit database still unreachable (%s): %d rows spooled, next retry in %.1fs",
                _brief(exc),
                self.spool_depth(),
                self._retry_delay_s,
            )
        self._next_retry = time.monotonic() + self._retry_delay_s


def _brief(exc: BaseException) -> str:
    """The driver's message, without the SQL and parameters SQLAlchemy appends."""
    cause: BaseException = exc.orig if isinstance(exc, DBAPIError) and exc.orig else exc
    text = str(cause).strip().splitlines()[0] if str(cause).strip() else type(cause).__name__
    return text[:300]
