"""Rows the database refused for their content, kept for an operator (docs/audit.md#quarantine).

`quarantine.jsonl` in the spool directory: one ASCII JSON line per row with the reason, at most
once per `invocation_id` (a segment replayed after a crash does not add a row twice).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from lookup_knowledge.audit.lines import record_dict
from lookup_knowledge.audit.segments import append_file
from lookup_knowledge.domain.audit import AuditRow

QUARANTINE_FILE = "quarantine.jsonl"


class Quarantine:
    def __init__(self, directory: Path) -> None:
        self.path = Path(directory) / QUARANTINE_FILE
        self._lock = threading.Lock()
        self._ids = {entry["invocation_id"] for entry in read_entries(self.path)}

    def size(self) -> int:
        with self._lock:
            return len(self._ids)

    def add(self, record: AuditRow, reason: str) -> bool:
        """Keep the row (flushed to disk); False when it was already kept. Raises OSError."""
        entry = {
            "invocation_id": record.invocation_id,
            "quarantined_at": datetime.now(UTC).isoformat(),
            "reason": reason,
            "record": record_dict(record),
        }
        line = json.dumps(entry, ensure_ascii=True, separators=(",", ":"), default=str) + "\n"
        with self._lock:
            if record.invocation_id in self._ids:
                return False
            self.path.parent.mkdir(parents=True, exist_ok=True)
            append_file(self.path, line.encode("ascii"))
            self._ids.add(record.invocation_id)
        return True


def read_entries(path: Path) -> Iterator[dict[str, Any]]:
    """The quarantine's entries in the order they were kept; unreadable lines are skipped."""
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        return
    with handle:
        for line in handle:
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if isinstance(entry, dict) and "invocation_id" in entry:
                yield entry
