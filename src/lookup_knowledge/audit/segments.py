"""Spool segment files: creating, claiming, reading and acknowledging them (see spool.py).

A segment is `segment-<time_ns>-<pid>-<random>.jsonl`, one row a line (audit/lines.py), held
under an exclusive `flock` by the one process that appends to it or drains it, so no process
touches a segment still in use; a segment whose process died is anyone's to adopt. It is
deleted once all its rows are acknowledged and a fresh one has replaced it. `<segment>.ack` says
how far it is acknowledged (`offset rows`, rewritten in place after each batch), so a process
that adopts it starts there; were that file stale, rows would be offered twice and skipped by
the database (unique ids).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

from lookup_knowledge.audit.lines import first_created_at

SEGMENT_GLOB = "segment-*.jsonl"
ACK_SUFFIX = ".ack"
_ACK_FORMAT = b"%020d %020d\n"  # fixed width: a rewrite always covers the previous value
READ_CHUNK = 1024 * 1024


@dataclass(eq=False)
class Segment:
    path: Path
    fd: int  # held open (and flock'd) for as long as this process owns the segment
    size: int = 0  # bytes of whole lines
    rows: int = 0  # lines
    acked_size: int = 0
    acked_rows: int = 0
    oldest: float | None = None  # epoch seconds of the first unacknowledged row, when known
    ack_fd: int | None = None  # the `.ack` file, opened at the first acknowledgement

    @property
    def waiting(self) -> int:
        return self.rows - self.acked_rows

    @property
    def ack_path(self) -> Path:
        return self.path.with_name(self.path.name + ACK_SUFFIX)

    def record_ack(self) -> None:
        """Rewrite how far the segment is acknowledged (no flush: a stale value only replays)."""
        if self.ack_fd is None:
            self.ack_fd = os.open(self.ack_path, os.O_WRONLY | os.O_CREAT, 0o600)
        os.pwrite(self.ack_fd, _ACK_FORMAT % (self.acked_size, self.acked_rows), 0)

    def close_files(self) -> None:
        for fd in (self.fd, self.ack_fd):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)


def open_segment(directory: Path) -> Segment:
    name = f"segment-{time.time_ns():020d}-{os.getpid()}-{secrets.token_hex(4)}.jsonl"
    # Locked under a name nobody looks at, then renamed: no one can claim it while empty.
    temp = directory / f".{name}.tmp"
    fd = os.open(temp, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.rename(temp, directory / name)
        fsync_dir(directory)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            temp.unlink()
        raise
    return Segment(directory / name, fd)


def claim(path: Path) -> Segment | None:
    """The segment, locked and counted, unless a live process holds it or it is gone."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        stat = os.fstat(fd)
        if stat.st_nlink == 0:  # deleted between our listing and our lock
            raise BlockingIOError
    except BlockingIOError:
        os.close(fd)
        return None
    segment = Segment(path, fd, size=stat.st_size)
    acked = read_ack(segment.ack_path)
    offset, first = 0, b""
    for line in read_lines(fd, 0, stat.st_size, None):
        offset += len(line)
        segment.rows += 1
        if (offset, segment.rows) == acked:  # a valid acknowledgement: start after it
            segment.acked_size, segment.acked_rows, first = offset, segment.rows, b""
        elif not first:
            first = line
    segment.oldest = first_created_at(first) or stat.st_mtime
    return segment


def read_ack(path: Path) -> tuple[int, int]:
    """(offset, rows) acknowledged per a segment's `.ack` file; (0, 0) when absent or unreadable."""
    try:
        offset, rows = path.read_bytes().split()
        return int(offset), int(rows)
    except (OSError, ValueError):
        return 0, 0


def read_lines(fd: int, start: int, stop: int, max_lines: int | None) -> list[bytes]:
    """Lines of [start, stop); a last line without its newline (torn) is returned as is."""
    lines: list[bytes] = []
    pending = b""
    offset = start
    while offset < stop and (max_lines is None or len(lines) < max_lines):
        chunk = os.pread(fd, min(READ_CHUNK, stop - offset), offset)
        if not chunk:
            break
        offset += len(chunk)
        data = pending + chunk
        begin = 0
        while max_lines is None or len(lines) < max_lines:
            newline = data.find(b"\n", begin)
            if newline < 0:
                break
            lines.append(data[begin : newline + 1])
            begin = newline + 1
        pending = data[begin:]
        if max_lines is not None and len(lines) >= max_lines:
            return lines
    if pending and offset >= stop:
        lines.append(pending)
    return lines


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def append_file(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        write_all(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
