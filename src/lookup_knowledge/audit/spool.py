"""Durable local spool for audit rows while the database is unreachable (docs/audit.md#durability).

Layout: `segment-<time_ns>-<pid>-<random>.jsonl` files under the spool directory, one record per
line, appended and fsync'd before `append` returns. A writer holds an exclusive `flock` on the
segment it appends to, so another process sharing the directory never replays (and deletes) a
segment that is still growing; a segment whose writer closed it or died is anyone's to replay.

Replay walks segments in name (creation time) order, line by line, and deletes a segment only
once all its rows are in the database. A replay cut short is simply repeated later: the unique
`invocation_id` makes a second insert of the same row a no-op. Lines that cannot be decoded (a
torn last line after a crash) go to `corrupt.jsonl`, rows the database refuses to
`rejected.jsonl`; both are kept for an operator, never replayed automatically.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import secrets
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import fields
from pathlib import Path

from lookup_knowledge.adapters.audit_sql import json_safe
from lookup_knowledge.domain.audit import AuditRecord

log = logging.getLogger(__name__)

SEGMENT_GLOB = "segment-*.jsonl"
CORRUPT_FILE = "corrupt.jsonl"
REJECTED_FILE = "rejected.jsonl"
_RECORD_FIELDS = frozenset(f.name for f in fields(AuditRecord))


def encode_record(record: AuditRecord) -> bytes:
    """One spool line: the record as JSON, newline-terminated."""
    line = json.dumps(
        json_safe(record.to_dict()), ensure_ascii=False, allow_nan=False, sort_keys=True
    )
    return line.encode("utf-8") + b"\n"


def decode_record(line: bytes) -> AuditRecord:
    """The record of one spool line; raises ValueError/TypeError/KeyError on a bad line."""
    data = json.loads(line)
    if not isinstance(data, dict):
        raise ValueError("spool line is not a JSON object")
    values = {k: v for k, v in data.items() if k in _RECORD_FIELDS}
    if not values.get("invocation_id"):
        # A line without an id still replays exactly once: its id is derived from its bytes.
        values["invocation_id"] = hashlib.sha256(line.strip()).hexdigest()[:32]
    return AuditRecord.from_dict(values)


class AuditSpool:
    """Append-only, fsync'd segment files; thread-safe."""

    def __init__(
        self, directory: Path, *, max_segment_bytes: int = 64 * 1024 * 1024, batch_size: int = 200
    ) -> None:
        self._dir = Path(directory)
        self._dir.mkdir(parents=True, exist_ok=True)
        self._max_segment_bytes = max_segment_bytes
        self._batch_size = batch_size
        self._lock = threading.Lock()
        self._active_fd: int | None = None
        self._active_name = ""
        self._active_bytes = 0
        # Rows per segment this spool knows of: its own, and those it found unowned.
        self._counts: dict[str, int] = {}
        for path in self._segments():
            with self._claimed(path) as fd:
                if fd is not None:
                    self._counts[path.name] = _count_lines(fd)

    @property
    def directory(self) -> Path:
        return self._dir

    def depth(self) -> int:
        """Rows waiting in segments this spool owns or found unowned."""
        with self._lock:
            return sum(self._counts.values())

    def has_unowned_segments(self) -> bool:
        """Whether a segment exists that no live writer is appending to (a restart's leftovers)."""
        with self._lock:
            active = self._active_name
        for path in self._segments():
            if path.name == active:
                continue
            with self._claimed(path) as fd:
                if fd is not None:
                    return True
        return False

    def append(self, records: Sequence[AuditRecord]) -> None:
        """Write records durably (fsync) before returning; raises OSError on a disk failure."""
        if not records:
            return
        data = b"".join(encode_record(r) for r in records)
        with self._lock:
            if self._active_fd is None or self._active_bytes >= self._max_segment_bytes:
                self._seal()
                self._open_segment()
            assert self._active_fd is not None
            try:
                _write_all(self._active_fd, data)
                os.fsync(self._active_fd)
            except OSError:
                # Whatever reached the file is either whole lines (replayed, de-duplicated by
                # invocation id) or a torn tail (kept as corrupt); never append after it.
                self._seal()
                raise
            self._active_bytes += len(data)
            self._counts[self._active_name] = self._counts.get(self._active_name, 0) + len(records)

    def replay(self, write: Callable[[list[AuditRecord]], None]) -> int:
        """Hand every unowned segment's rows to `write` in order, deleting each segment after.

        `write` raising stops the replay and propagates; the segment stays for the next try.
        Returns the number of rows handed over.
        """
        with self._lock:
            self._seal()
        total = 0
        for path in self._segments():
            with self._claimed(path) as fd:
                if fd is None:
                    continue
                rows = 0
                batch: list[AuditRecord] = []
                for line in _lines(fd):
                    record = self._decode(line, path)
                    if record is None:
                        continue
                    batch.append(record)
                    if len(batch) >= self._batch_size:
                        write(batch)
                        rows += len(batch)
                        batch = []
                if batch:
                    write(batch)
                    rows += len(batch)
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
                _fsync_dir(self._dir)
            with self._lock:
                self._counts.pop(path.name, None)
            total += rows
        with self._lock:
            # Segments of ours that another process replayed meanwhile.
            for name in [n for n in self._counts if n != self._active_name]:
                if not (self._dir / name).exists():
                    del self._counts[name]
        return total

    def reject(self, record: AuditRecord, reason: str) -> None:
        """Keep a row the database refuses, with the reason, for an operator."""
        entry = {"reason": reason, "record": json.loads(encode_record(record))}
        self._keep(REJECTED_FILE, json.dumps(entry, ensure_ascii=False).encode("utf-8") + b"\n")

    def close(self) -> None:
        """Stop appending; the current segment becomes replayable by anyone."""
        with self._lock:
            self._seal()

    # --- internals ---

    def _segments(self) -> list[Path]:
        return sorted(self._dir.glob(SEGMENT_GLOB))

    @contextlib.contextmanager
    def _claimed(self, path: Path) -> Iterator[int | None]:
        """The segment opened under an exclusive lock, or None if another writer holds it."""
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            yield None
            return
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                yield None
                return
            # Replayed and deleted by someone else between our listing and our lock.
            yield None if os.fstat(fd).st_nlink == 0 else fd
        finally:
            os.close(fd)  # also releases the lock

    def _open_segment(self) -> None:
        name = f"segment-{time.time_ns():020d}-{os.getpid()}-{secrets.token_hex(4)}.jsonl"
        # Locked under a name replay ignores, then renamed: no one can claim it while empty.
        temp = self._dir / f".{name}.tmp"
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            os.rename(temp, self._dir / name)
            _fsync_dir(self._dir)
        except BaseException:
            os.close(fd)
            with contextlib.suppress(OSError):
                temp.unlink()
            raise
        self._active_fd, self._active_name, self._active_bytes = fd, name, 0
        self._counts.setdefault(name, 0)

    def _seal(self) -> None:
        if self._active_fd is None:
            return
        fd, self._active_fd, self._active_name = self._active_fd, None, ""
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def _decode(self, line: bytes, path: Path) -> AuditRecord | None:
        if not line.strip():
            return None
        try:
            return decode_record(line)
        except (ValueError, TypeError, KeyError) as exc:
            log.error(
                "audit spool: undecodable line in %s kept in %s (%s)", path.name, CORRUPT_FILE, exc
            )
            self._keep(CORRUPT_FILE, line if line.endswith(b"\n") else line + b"\n")
            return None

    def _keep(self, name: str, data: bytes) -> None:
        fd = os.open(self._dir / name, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _lines(fd: int) -> Iterator[bytes]:
    with os.fdopen(os.dup(fd), "rb") as handle:
        handle.seek(0)
        yield from handle


def _count_lines(fd: int) -> int:
    return sum(1 for line in _lines(fd) if line.strip())


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
