"""The spool: the local outbox every audit row passes through (docs/audit.md#durability).

`append` writes a row's line to this process's active segment before the answer leaves, so a
killed process keeps it (the kernel has it); a syncer thread `fdatasync`s within
`fsync_interval_s` (group commit). The writer takes rows back in append order with `take` —
from memory while it keeps up, from the file when it fell behind — and `ack`s them once the
database (or the quarantine) has them. Segments a stopped process left behind are adopted
(`adopt_orphans`) and drained first; undecodable lines (torn by a crash) go to `corrupt.jsonl`.
The files themselves are described in segments.py.
"""

from __future__ import annotations

import bisect
import contextlib
import itertools
import logging
import math
import os
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from lookup_knowledge.audit.gil import lower_this_thread
from lookup_knowledge.audit.lines import decode_record, encode_record
from lookup_knowledge.audit.segments import (
    SEGMENT_GLOB,
    Segment,
    append_file,
    claim,
    open_segment,
    read_lines,
    write_all,
)
from lookup_knowledge.domain.audit import AuditRow

log = logging.getLogger(__name__)

CORRUPT_FILE = "corrupt.jsonl"
ROTATE_BYTES = 1024 * 1024  # a fully acknowledged segment is replaced past this size
MAX_SEGMENT_BYTES = 64 * 1024 * 1024  # a segment is replaced past this size regardless
CACHE_ROWS = 10_000  # rows kept in memory for the writer; past this it reads the file


@dataclass
class Batch:
    """Rows in append order from one segment; `ack` them once they are stored."""

    segment: Segment
    records: list[AuditRow] = field(default_factory=list)
    ends: list[tuple[int, int]] = field(default_factory=list)  # (offset, lines) after each row
    end: tuple[int, int] = (0, 0)  # after the whole batch (trailing undecodable lines included)


class Spool:
    """Thread-safe. `start` the syncer, `append` from any thread, one writer `take`s and `ack`s."""

    def __init__(
        self,
        directory: Path,
        *,
        fsync_interval_s: float = 0.05,
        cache_rows: int = CACHE_ROWS,
        rotate_bytes: int = ROTATE_BYTES,
        max_segment_bytes: int = MAX_SEGMENT_BYTES,
        thread_nice: int = 0,
    ) -> None:
        self._dir = Path(directory)
        self._dir.mkdir(parents=True, exist_ok=True)
        self._fsync_interval_s = fsync_interval_s
        self._cache_rows = cache_rows
        self._rotate_bytes = rotate_bytes
        self._max_segment_bytes = max_segment_bytes
        self._thread_nice = thread_nice  # the syncer's, above the process's (gil.py)
        self._lock = threading.Lock()
        self._rows_ready = threading.Condition(self._lock)
        self._active: Segment | None = None
        self._spare: Segment | None = None
        self._backlog: list[Segment] = []  # sealed segments to drain, oldest name first
        self._cache: deque[tuple[AuditRow, int]] = deque()  # active's unacked rows, with ends
        self._cache_ok = True
        self._dirty = False
        self._dirty_event = threading.Event()  # set when a write is waiting for the syncer
        self._wake_at: float = math.inf  # rows the writer waits for (none: infinity)
        self._to_sync: list[int] = []  # duplicated fds of sealed segments, for the syncer
        self._closed = False
        self._interrupted = False
        self._stop = threading.Event()
        self._syncer: threading.Thread | None = None
        self.error: str | None = None  # the last append failure, until an append succeeds
        self.adopt_orphans()

    @property
    def directory(self) -> Path:
        return self._dir

    def start(self) -> None:
        """Start the syncer thread (group fsync, and a spare segment kept ready)."""
        if self._syncer is None:
            self._syncer = threading.Thread(target=self._sync_loop, name="audit-spool", daemon=True)
            self._syncer.start()

    # --- appending (any thread) ---

    def append(self, record: AuditRow) -> None:
        """Write the row's line; returns once the kernel has it. Raises OSError."""
        line = encode_record(record)
        with self._lock:
            if self._closed:
                self._append_detached(line)
                return
            try:
                segment = self._writable_segment()
                write_all(segment.fd, line)
            except OSError as exc:
                self.error = f"{type(exc).__name__}: {exc}"
                self._seal_active()  # whatever reached the file is whole lines or a torn tail
                raise
            self.error = None
            if segment.waiting == 0:
                segment.oldest = record.created_at.timestamp()
            segment.size += len(line)
            segment.rows += 1
            if not self._dirty:  # the syncer flushes within fsync_interval_s from here
                self._dirty = True
                self._dirty_event.set()
            if self._cache_ok:
                if len(self._cache) < self._cache_rows:
                    self._cache.append((record, segment.size))
                else:  # the writer is far behind: it reads the file from here on
                    self._cache_ok = False
                    self._cache.clear()
            # Wake the writer only when what it waits for is there: no wake-up per row.
            if self._wake_at <= self._depth_locked():
                self._rows_ready.notify()

    # --- the writer's side ---

    def wait(self, timeout: float, *, rows: int = 1) -> None:
        """Block until `rows` rows wait, `interrupt` is called, or `timeout` passes."""
        with self._lock:
            self._wake_at = rows
            self._rows_ready.wait_for(
                lambda: self._closed or self._interrupted or self._depth_locked() >= rows,
                timeout,
            )
            self._wake_at = math.inf
            self._interrupted = False

    def interrupt(self) -> None:
        """Wake a writer blocked in `wait` (to stop, or to take held rows)."""
        with self._lock:
            self._interrupted = True
            self._rows_ready.notify_all()

    def take(self, max_rows: int) -> Batch | None:
        """The next rows in order (not removed until `ack`), or None when none wait."""
        with self._lock:
            if self._closed:
                return None
            segment = next((s for s in self._backlog if s.waiting), None)
            if segment is None:
                segment = self._active
                if segment is None or not segment.waiting:
                    return None
                if self._cache_ok:
                    return self._from_cache(segment, max_rows)
            start, stop, lines = segment.acked_size, segment.size, segment.acked_rows
        return self._from_file(segment, start, stop, lines, max_rows)

    def ack(self, batch: Batch, rows: int | None = None) -> None:
        """Acknowledge the batch's first `rows` rows (all by default): they are stored."""
        count = len(batch.records) if rows is None else rows
        if count == 0 and batch.records:
            return
        end = batch.end if count == len(batch.records) else batch.ends[count - 1]
        segment = batch.segment
        with self._lock:
            if self._closed or end[0] <= segment.acked_size:
                return
            if segment is self._active and self._cache_ok:
                for _ in range(count):
                    self._cache.popleft()
            segment.acked_size, segment.acked_rows = end
            with contextlib.suppress(OSError):
                segment.record_ack()
            if not segment.waiting:
                segment.oldest = None
            elif segment is self._active and self._cache_ok and self._cache:
                segment.oldest = self._cache[0][0].created_at.timestamp()
            elif count:
                segment.oldest = batch.records[count - 1].created_at.timestamp()
            if segment is self._active:
                if not self._cache_ok and not segment.waiting:
                    self._cache_ok = True  # caught up with the file: back to memory
                if not segment.waiting and segment.size >= self._rotate_bytes:
                    self._active = None
                    self._drop(segment)
            elif not segment.waiting and segment in self._backlog:
                self._backlog.remove(segment)
                self._drop(segment)

    def depth(self) -> int:
        """Rows appended (or adopted) and not yet acknowledged."""
        with self._lock:
            return self._depth_locked()

    def oldest_age(self) -> float | None:
        """Seconds since the oldest unacknowledged row was made, or None when none waits."""
        with self._lock:
            times = [s.oldest for s in self._segments_locked() if s.waiting and s.oldest]
        return max(0.0, time.time() - min(times)) if times else None

    def adopt_orphans(self) -> int:
        """Take over segments no live process holds (a killed process's); rows adopted."""
        with self._lock:
            known = {s.path.name for s in self._segments_locked()}
            if self._spare is not None:
                known.add(self._spare.path.name)
        adopted = 0
        for temp in self._dir.glob(".segment-*.tmp"):  # a process died while creating one
            leftover = claim(temp)
            if leftover is not None:
                self._drop(leftover)
        for path in sorted(self._dir.glob(SEGMENT_GLOB)):
            if path.name in known:
                continue
            segment = claim(path)
            if segment is None:
                continue
            if not segment.waiting:  # a spare never written to, or a drained segment
                self._drop(segment)
                continue
            with self._lock:
                if self._closed:
                    os.close(segment.fd)
                    break
                bisect.insort(self._backlog, segment, key=lambda s: s.path.name)
                self._rows_ready.notify_all()
            adopted += segment.waiting
        if adopted:
            log.warning("audit spool: adopted %d rows left by a stopped process", adopted)
        return adopted

    # --- durability and shutdown ---

    def sync(self) -> None:
        """Flush what was appended to disk (called by the syncer; also at close)."""
        with self._lock:
            fds, self._to_sync = self._to_sync, []
            if self._dirty and self._active is not None:
                fds.append(os.dup(self._active.fd))
                self._dirty = False
        for fd in fds:
            try:
                os.fdatasync(fd)
            except OSError as exc:
                log.error("audit spool: flush to disk failed: %s", exc)
            finally:
                os.close(fd)

    def close(self, *, keep_open: bool = False) -> None:
        """Flush and stop; segments stay for the next start. `keep_open` leaves the files open
        (a writer thread still blocked in the database may yet read them)."""
        self._stop.set()
        self._dirty_event.set()  # wake the syncer
        if self._syncer is not None:
            self._syncer.join(5)
        self.sync()
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._rows_ready.notify_all()
            segments = [*self._segments_locked(), *([self._spare] if self._spare else [])]
            self._active, self._spare, self._backlog = None, None, []
            self._cache.clear()
        for segment in segments:
            if segment.waiting == 0:  # a drained segment holds nothing for the next start
                self._drop(segment)
            elif not keep_open:
                segment.close_files()

    def keep_corrupt(self, line: bytes, reason: str) -> None:
        log.error("audit spool: undecodable line kept in %s (%s)", CORRUPT_FILE, reason)
        append_file(self._dir / CORRUPT_FILE, line if line.endswith(b"\n") else line + b"\n")

    # --- internals ---

    def _depth_locked(self) -> int:
        return sum(s.waiting for s in self._segments_locked())

    def _segments_locked(self) -> list[Segment]:
        return [*self._backlog, *([self._active] if self._active else [])]

    def _writable_segment(self) -> Segment:
        active = self._active
        if active is not None and active.size >= self._max_segment_bytes:
            self._seal_active()
            active = None
        if active is None:
            active, self._spare = self._spare or open_segment(self._dir), None
            self._active = active
            self._cache_ok, self._cache = True, deque()
        return active

    def _seal_active(self) -> None:
        """The active segment joins the backlog (drained from the file); a new one comes next."""
        segment, self._active = self._active, None
        self._cache.clear()
        self._cache_ok = True
        if segment is None:
            return
        if segment.waiting:
            self._backlog.append(segment)
            self._to_sync.append(os.dup(segment.fd))
        else:
            self._drop(segment)

    def _drop(self, segment: Segment) -> None:
        """Delete a drained segment (its `.ack` first: a segment without one replays whole)."""
        for path in (segment.ack_path, segment.path):
            with contextlib.suppress(OSError):
                path.unlink()
        segment.close_files()

    def _from_cache(self, segment: Segment, max_rows: int) -> Batch:
        batch = Batch(segment)
        for record, end in itertools.islice(self._cache, max_rows):
            batch.records.append(record)
            batch.ends.append((end, segment.acked_rows + len(batch.records)))
        batch.end = batch.ends[-1]
        return batch

    def _from_file(
        self, segment: Segment, start: int, stop: int, lines: int, max_rows: int
    ) -> Batch:
        batch = Batch(segment, end=(start, lines))
        offset = start
        read = read_lines(segment.fd, start, stop, max_rows)
        if not read:  # cut short by someone else: nothing more can be read from it
            log.error("audit spool: %s ends before its rows; skipping the rest", segment.path)
            batch.end = (stop, segment.rows)
        for line in read:
            offset += len(line)
            lines += 1
            try:
                record = decode_record(line)
            except (ValueError, TypeError, KeyError) as exc:
                self.keep_corrupt(line, f"{segment.path.name}: {exc}")
            else:
                batch.records.append(record)
                batch.ends.append((offset, lines))
            batch.end = (offset, lines)
        return batch

    def _append_detached(self, line: bytes) -> None:
        """After close: a one-row segment of its own, flushed, for the next start."""
        segment = open_segment(self._dir)
        try:
            write_all(segment.fd, line)
            os.fsync(segment.fd)
        finally:
            os.close(segment.fd)

    def _sync_loop(self) -> None:
        """Group commit: after the first write since the last flush, wait `fsync_interval_s`
        for more, then flush them all at once. Idle, it sleeps (and keeps a spare ready)."""
        lower_this_thread(self._thread_nice)
        while not self._stop.is_set():
            self._dirty_event.wait(1.0)
            if self._dirty_event.is_set() and not self._stop.wait(self._fsync_interval_s):
                self._dirty_event.clear()
            try:
                self.sync()
                with self._lock:
                    need_spare = self._spare is None and not self._closed
                if need_spare:
                    spare: Segment | None = open_segment(self._dir)
                    with self._lock:
                        if self._spare is None and not self._closed:
                            self._spare, spare = spare, None
                    if spare is not None:
                        self._drop(spare)
            except Exception:  # the syncer must outlive any surprise
                log.exception("audit spool syncer error")
