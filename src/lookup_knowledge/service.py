"""The one orchestrator: ledger claim → py-rag → pipeline → ledger READY → audit.

See docs/pipeline.md#data-path.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from lookup_knowledge.audit.row import AuditDraft
from lookup_knowledge.domain.contract import RagToolResult
from lookup_knowledge.domain.errors import (
    Conflict,
    InvalidRequest,
    LedgerUnavailable,
    LookupKnowledgeError,
    Overloaded,
    UpstreamError,
)
from lookup_knowledge.domain.ids import random_hex
from lookup_knowledge.domain.ledger import LedgerEntry, LedgerStatus, sha256_hex
from lookup_knowledge.domain.ports import AuditPort, LedgerPort, LookupObserver, SearchPort
from lookup_knowledge.pipeline.limits import PipelineLimits, ProjectionLimits
from lookup_knowledge.pipeline.run import run_pipeline

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class LookupCommand:
    run_id: str
    tool_call_id: str
    query: str
    step_id: str | None = None
    filters: Mapping[str, str] | None = field(default=None)


@dataclass(frozen=True, slots=True)
class LookupAnswer:
    body: bytes  # exactly the bytes stored in the ledger
    evidence_status: str
    replayed: bool = False


class LookupService:
    def __init__(
        self,
        *,
        search: SearchPort,
        ledger: LedgerPort,
        audit: AuditPort,
        limits: PipelineLimits,
        projection_limits: ProjectionLimits,
        observer: LookupObserver | None = None,
        max_query_chars: int = 4000,
    ) -> None:
        self._search = search
        self._ledger = ledger
        self._audit = audit
        self._limits = limits
        self._projection_limits = projection_limits
        self._observer = observer
        self._max_query_chars = max_query_chars

    async def lookup(self, command: LookupCommand) -> LookupAnswer:
        """Answer one tool call; every outcome leaves exactly one audit row."""
        query = command.query.strip()
        draft = AuditDraft(
            run_id=command.run_id,
            tool_call_id=command.tool_call_id,
            query=query,
            step_id=command.step_id,
        )
        error_kind: str | None = None
        try:
            if not query or len(query) > self._max_query_chars:
                raise InvalidRequest(
                    f"query must be 1..{self._max_query_chars} characters after trimming",
                    details={"length": len(query)},
                )
            return await self._lookup(replace(command, query=query), draft)
        except LookupKnowledgeError as exc:
            draft.failed(exc.code, exc.message)
            error_kind = exc.kind if isinstance(exc, UpstreamError) else None
            raise
        except Exception as exc:
            draft.failed("INTERNAL_ERROR", repr(exc))
            raise
        finally:
            self._finish(draft, error_kind)

    async def _lookup(self, command: LookupCommand, draft: AuditDraft) -> LookupAnswer:
        query_sha256 = sha256_hex(command.query)
        token = random_hex()
        with draft.stage("ledger"):
            blocking = await self._ledger.claim(
                command.run_id, command.tool_call_id, query_sha256=query_sha256, token=token
            )
        if blocking is not None:
            return self._replay(blocking, query_sha256, draft)

        try:
            with draft.stage("pyrag"):
                outcome = await self._search.search(command.query, filters=command.filters)
            with draft.stage("pipeline"):
                output = run_pipeline(
                    command.query,
                    outcome,
                    tool_call_id=command.tool_call_id,
                    limits=self._limits,
                    projection_limits=self._projection_limits,
                )
            with draft.stage("ledger"):
                stored = await self._ledger.complete(
                    command.run_id,
                    command.tool_call_id,
                    token=token,
                    query_sha256=query_sha256,
                    body=output.projection.body,
                    evidence_status=output.projection.result.evidence_status.value,
                )
        except BaseException as exc:
            # Whatever stopped this call (py-rag, an overload, the READY write, a cancellation),
            # its claim is released now, not left PENDING to refuse retries until it expires.
            code = exc.code if isinstance(exc, LookupKnowledgeError) else "INTERNAL_ERROR"
            await asyncio.shield(self._mark_failed(command, token, query_sha256, code))
            raise

        if not stored:
            raise Conflict(
                "another call with the same run_id and tool_call_id completed first",
                details={
                    "run_id": command.run_id,
                    "tool_call_id": command.tool_call_id,
                    "reason": "completed_first",
                },
            )
        draft.succeeded(
            outcome=outcome,
            lookup=output.lookup,
            result=output.projection.result,
            projection=output.projection.summary,
            body=output.projection.body,
        )
        return LookupAnswer(
            body=output.projection.body,
            evidence_status=output.projection.result.evidence_status.value,
        )

    def _replay(self, entry: LedgerEntry, query_sha256: str, draft: AuditDraft) -> LookupAnswer:
        """Same ids again: the stored bytes when READY for the same query, else a conflict."""
        ids = {"run_id": entry.run_id, "tool_call_id": entry.tool_call_id}
        if entry.status is LedgerStatus.PENDING:
            raise Conflict(
                "a call with the same ids is in flight", details={**ids, "reason": "in_flight"}
            )
        if entry.status is not LedgerStatus.READY or entry.body is None:
            raise Conflict(
                "the ledger entry for these ids cannot be replayed",
                details={**ids, "reason": "not_replayable"},
            )
        if entry.query_sha256 != query_sha256:
            raise Conflict(
                "these ids were already used with another query",
                details={**ids, "reason": "query_mismatch"},
            )
        result = RagToolResult.model_validate_json(entry.body)
        draft.replayed(result, entry.body, original_created_at=entry.created_at)
        return LookupAnswer(
            body=entry.body, evidence_status=result.evidence_status.value, replayed=True
        )

    async def _mark_failed(
        self, command: LookupCommand, token: str, query_sha256: str, code: str
    ) -> None:
        """Best effort: the call fails either way; an unwritten FAILED expires as PENDING.

        A READY that did land (its answer lost) is never overwritten: `fail` refuses it.
        """
        try:
            await self._ledger.fail(
                command.run_id,
                command.tool_call_id,
                token=token,
                query_sha256=query_sha256,
                error_code=code,
            )
        except (LedgerUnavailable, Overloaded):
            log.warning(
                "ledger FAILED mark not written for %s/%s", command.run_id, command.tool_call_id
            )

    def refused(
        self,
        body: object,
        *,
        message: str,
        problems: list[dict[str, Any]] | None = None,
        code: str = "INVALID_REQUEST",
    ) -> None:
        """A call refused before it ran (its body broke the schema, or admission shed it with
        OVERLOADED) still leaves its row."""
        draft = AuditDraft.refused(body)
        draft.failed(code, message, problems=problems)
        self._finish(draft, None)

    def _finish(self, draft: AuditDraft, error_kind: str | None) -> None:
        """Make the audit row durable, then tell the observer; neither may fail the lookup.

        This runs before the answer is sent: an answered call's row is already in the spool.
        """
        record = draft.finish()
        try:
            with draft.stage("audit"):
                self._audit.submit(record)
        except Exception:
            log.exception("audit row could not be queued")
        if self._observer is not None:
            try:
                self._observer.lookup_finished(record, stages=draft.stages, error_kind=error_kind)
            except Exception:
                log.exception("lookup telemetry failed")
