"""Random ids for the hot path: a uuid4's 32 hex digits, drawn from the OS in batches.

A lookup draws three (the request id, the ledger claim's token, the audit row's
invocation_id). `uuid.uuid4()` asks the kernel for 16 bytes each time, and CPython releases
the GIL around that call, so each draw was a point where the audit writer thread could take
the GIL from the event loop and keep it for up to a switch interval
(docs/performance.md#hot-path). Here the kernel's random bytes are taken 4 KiB at a time and
handed out 16 at a time: the same source and the same unpredictability, one system call per
256 ids. A forked child drops what its parent had drawn, so no two processes share an id.
"""

from __future__ import annotations

import os
import threading

_IDS_PER_DRAW = 256
_lock = threading.Lock()
_pool = b""
_at = 0


def random_hex() -> str:
    """A random (version 4) UUID as 32 lowercase hex digits, as `uuid.uuid4().hex` gives."""
    global _pool, _at
    with _lock:
        if _at >= len(_pool):
            _pool = os.urandom(16 * _IDS_PER_DRAW)
            _at = 0
        raw = bytearray(_pool[_at : _at + 16])
        _at += 16
    raw[6] = (raw[6] & 0x0F) | 0x40  # version 4
    raw[8] = (raw[8] & 0x3F) | 0x80  # the RFC 4122 variant
    return raw.hex()


def _forget_after_fork() -> None:
    global _pool, _at, _lock
    _lock = threading.Lock()  # a fork taken while another thread held it leaves it held
    _pool, _at = b"", 0


os.register_at_fork(after_in_child=_forget_after_fork)
