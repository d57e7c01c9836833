"""Rows the database refused for their content, kept for an operator (docs/audit.md#quarantine).

`quarantine.jsonl` in the spool directory: one ASCII JSON line per row with the reason, at most
once per `invocation_id` (a segment replayed after a crash does not add a row twice).

`requeue` writes them back once the operator has fixed what refused them (a trigger, a column
too narrow, a constraint). The service may be running meanwhile: every change to the file is
made under an exclusive `flock` on `quarantine.lock`, shared by the service's writer thread and
the `audit requeue` command, and the file is replaced atomically, so no row is lost or doubled.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from lookup_knowledge.audit.lines import decode_record, record_dict
from lookup_knowledge.audit.segments import append_file, fsync_dir, write_all
from lookup_knowledge.domain.audit import AuditRow

QUARANTINE_FILE = "quarantine.jsonl"
LOCK_FILE = "quarantine.lock"


class Quarantine:
    def __init__(self, directory: Path) -> None:
        self.path = Path(directory) / QUARANTINE_FILE
        self._lock = threading.Lock()
        self._seen: tuple[int, int, int] | None = None  # the file's identity when last read
        self._ids: set[str] = set()
        with self._lock:
            self._reload()

    def size(self) -> int:
        """Rows kept; re-read when another process (`audit requeue`) changed the file."""
        with self._lock:
            self._reload()
            return len(self._ids)

    def add(self, record: AuditRow, reason: str) -> bool:
        """Keep the row (flushed to disk); False when it was already kept. Raises OSError."""
        entry = {
            "invocation_id": record.invocation_id,
            "quarantined_at": datetime.now(UTC).isoformat(),
            "reason": reason,
            "record": record_dict(record),
        }
        line = _line(entry)
        with self._lock, file_lock(self.path.parent):
            self._reload()
            if record.invocation_id in self._ids:
                return False
            append_file(self.path, line)
            self._ids.add(record.invocation_id)
            self._seen = _identity(self.path)
        return True

    def _reload(self) -> None:
        identity = _identity(self.path)
        if identity != self._seen:
            self._ids = {entry["invocation_id"] for entry in read_entries(self.path)}
            self._seen = identity


@dataclass
class Requeued:
    """What `requeue` did: ids written, ids refused again (with why), ids left untried."""

    written: list[str] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)
    untried: int = 0
    stopped: str | None = None  # why the database could not be used, when it could not


def requeue(
    directory: Path,
    write: Callable[[AuditRow], None],
    explain: Callable[[Exception], tuple[bool, str]],
) -> Requeued:
    """Write each quarantined row with `write`, then drop the written ones from the file.

    `explain(exc)` says whether the database refused the row itself (it stays, with the new
    reason) or cannot be used at all (nothing more is tried), and why. Rows are written
    outside the lock, so the service is never held up; the file is rewritten under it from
    what it holds then, keeping rows added meanwhile.
    """
    path = Path(directory) / QUARANTINE_FILE
    result = Requeued()
    entries = list(read_entries(path))
    for position, entry in enumerate(entries):
        try:
            row = decode_record(orjson.dumps(entry["record"]))
        except (ValueError, TypeError, KeyError) as exc:
            result.refused[entry["invocation_id"]] = f"unreadable row: {exc}"
            continue
        try:
            write(row)
        except Exception as exc:  # the caller tells a refused row from an outage
            for_content, reason = explain(exc)
            if not for_content:
                result.stopped = reason
                result.untried = len(entries) - position
                break
            result.refused[entry["invocation_id"]] = reason
        else:
            result.written.append(entry["invocation_id"])
    if result.written or result.refused:
        _rewrite(path, set(result.written), result.refused)
    return result


def _rewrite(path: Path, written: set[str], refused: dict[str, str]) -> None:
    """Replace the file with its lines minus the written rows' ones, under the lock; a line
    that cannot be read is kept as it is."""
    now = datetime.now(UTC).isoformat()
    with file_lock(path.parent):
        kept: list[bytes] = []
        with contextlib.suppress(FileNotFoundError), path.open("rb") as handle:
            for line in handle:
                entry = _entry(line)
                identifier = entry.get("invocation_id") if entry else None
                if identifier in written:
                    continue
                if entry is not None and identifier in refused:
                    entry["requeue_failed_at"] = now
                    entry["requeue_reason"] = refused[identifier]
                    line = _line(entry)
                kept.append(line if line.endswith(b"\n") else line + b"\n")
        temporary = path.with_name(path.name + ".tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            write_all(fd, b"".join(kept))
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temporary, path)
        fsync_dir(path.parent)


def _entry(line: bytes) -> dict[str, Any] | None:
    try:
        entry = json.loads(line)
    except ValueError:
        return None
    return entry if isinstance(entry, dict) and "invocation_id" in entry else None


def _line(entry: dict[str, Any]) -> bytes:
    return (json.dumps(entry, ensure_ascii=True, separators=(",", ":"), default=str) + "\n").encode(
        "ascii"
    )


@contextlib.contextmanager
def file_lock(directory: Path) -> Iterator[None]:
    """An exclusive lock on the quarantine, across processes."""
    directory.mkdir(parents=True, exist_ok=True)
    fd = os.open(directory / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _identity(path: Path) -> tuple[int, int, int] | None:
    try:
        stat = path.stat()
    except FileNotFoundError:
        return None
    return (stat.st_ino, stat.st_size, stat.st_mtime_ns)


def read_entries(path: Path) -> Iterator[dict[str, Any]]:
    """The quarantine's entries in the order they were kept; unreadable lines are skipped."""
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        return
    with handle:
        for line in handle:
            entry = _entry(line)
            if entry is not None:
                yield entry
