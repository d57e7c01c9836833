"""When the client sends a call again: only where the ledger makes it safe, and bounded.

A lookup is identified by `(run_id, tool_call_id)` (docs/ledger.md#replay), and the client
keeps both for every attempt, so sending it again never runs it twice: a call that was
answered is replayed byte for byte, one still running answers 409 `in_flight`. Retried:

* no answer at all (`TransportError`): the call may or may not have run — the ids settle it;
* 503 `OVERLOADED`: refused before anything was recorded; wait `Retry-After`;
* 409 with reason `in_flight` or `completed_first`: wait, then the same call replays.

Never retried: every other error, including 502/504 (py-rag failed; whether to ask again is
the caller's decision) and 503 `LEDGER_UNAVAILABLE` (fail closed).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from lookup_knowledge.client.errors import (
    ConflictError,
    LookupKnowledgeClientError,
    Overloaded,
    TransportError,
)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """`max_attempts` counts the first one; backoff doubles from `backoff_s` up to the cap."""

    max_attempts: int = 4
    backoff_s: float = 0.25
    max_backoff_s: float = 4.0
    max_retry_after_s: float = 30.0
    jitter: bool = True

    def delay(self, attempt: int, error: LookupKnowledgeClientError) -> float | None:
        """Seconds to wait before attempt `attempt + 1`, or None to give up with `error`."""
        if attempt >= self.max_attempts:
            return None
        backoff = min(self.backoff_s * 2.0 ** (attempt - 1), self.max_backoff_s)
        if self.jitter:
            backoff *= random.uniform(0.5, 1.0)
        if isinstance(error, Overloaded):
            wait = error.retry_after
            return backoff if wait is None else min(wait, self.max_retry_after_s)
        if isinstance(error, ConflictError):
            return backoff if error.retryable else None
        if isinstance(error, TransportError):
            return backoff
        return None


NO_RETRY = RetryPolicy(max_attempts=1)
