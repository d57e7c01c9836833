"""The row builder: what one call leaves in the audit table (docs/audit.md).

Pure: no I/O. Text is made valid Unicode here (docs/audit.md#bounds); `retrieval_details` is
bounded before the insert (`audit.sql`), its untrusted part already at the adapter.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from lookup_knowledge.domain.audit import (
    EVIDENCE_REF_TEXT_CHARS,
    OUTPUT_PREVIEW_CHARS,
    AuditRecord,
)
from lookup_knowledge.domain.contract import RagToolResult
from lookup_knowledge.domain.jsonsafe import escape_surrogates
from lookup_knowledge.domain.models import (
    LookupResult,
    ProjectionSummary,
    RerankTraceItem,
    SearchOutcome,
)


def evidence_refs(result: RagToolResult) -> list[dict[str, Any]]:
    """Where each citation sits in the body; an empty result is a negative observation only."""
    if not result.evidence:
        return [{"raw_path": "$.no_evidence"}]
    return [
        {
            "raw_path": f"$.evidence[{i}]",
            "document_id": item.document_id,
            "text": item.excerpt[:EVIDENCE_REF_TEXT_CHARS],
        }
        for i, item in enumerate(result.evidence)
    ]


def _trace_item(item: RerankTraceItem) -> dict[str, Any]:
    return {
        "final_rank": item.final_rank,
        "source": item.source,
        "base_score": item.base_score,
        "final_score": item.final_score,
        "boost_reasons": list(item.boost_reasons),
    }


def retrieval_details(
    outcome: SearchOutcome,
    lookup: LookupResult,
    result: RagToolResult,
    projection: ProjectionSummary,
) -> dict[str, Any]:
    pack = lookup.context_pack
    details: dict[str, Any] = {
        "retrieval_trace": outcome.retrieval_trace,
        "evidence_status": outcome.upstream_status,
        "adapter": {"hit_count": outcome.hit_count, "dropped_invalid": outcome.dropped_invalid},
        "postprocess": {
            "candidate_count": lookup.candidate_count,
            "evidence_block_count": lookup.evidence_block_count,
            "top_similarity": lookup.top_similarity,
            "relevance_level": lookup.relevance_level,
            "evidence_keys": [block.evidence_key for block in lookup.evidence_blocks],
            "rerank_trace": [_trace_item(item) for item in lookup.rerank_trace],
        },
        "context_pack": {
            "strategy": pack.strategy,
            "char_budget": pack.char_budget,
            "used_chars": pack.used_chars,
            "included_sources": list(pack.included_sources),
            "omitted_sources": list(pack.omitted_sources),
        },
        "projection": {
            "returned_count": projection.returned_count,
            "truncated": projection.truncated,
            "cuts": list(projection.cuts),
            "body_bytes": projection.body_bytes,
        },
        "evidence_refs": evidence_refs(result),
    }
    if outcome.trace_truncated:
        details["details_truncated"] = True
    return details


@dataclass(slots=True)
class AuditDraft:
    """Collects one call's row while it runs; `finish` freezes it with the measured duration."""

    run_id: str
    tool_call_id: str
    query: str
    step_id: str | None
    started: float = field(default_factory=time.perf_counter)
    fields: dict[str, Any] = field(default_factory=dict)
    stages: dict[str, float] = field(default_factory=dict)  # seconds per stage, summed

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """Time a stage; py-rag's time is also the row's `upstream_ms`."""
        started = time.perf_counter()
        try:
            yield
        finally:
            elapsed = time.perf_counter() - started
            self.stages[name] = self.stages.get(name, 0.0) + elapsed
            if name == "pyrag":
                self.fields["upstream_ms"] = round(elapsed * 1000)

    def succeeded(
        self,
        *,
        outcome: SearchOutcome,
        lookup: LookupResult,
        result: RagToolResult,
        projection: ProjectionSummary,
        body: bytes,
    ) -> None:
        self._result_fields(result, body)
        self.fields.update(
            top_quality_score=lookup.top_similarity,
            candidate_count=lookup.candidate_count,
            evidence_block_count=lookup.evidence_block_count,
            retrieval_details={
                **retrieval_details(outcome, lookup, result, projection),
                "stages_ms": _stages_ms(self.stages),
            },
        )

    def replayed(self, result: RagToolResult, body: bytes, *, original_created_at: str) -> None:
        self._result_fields(result, body)
        self.fields.update(
            replayed=True,
            retrieval_details={
                "replay_of": original_created_at,
                "evidence_refs": evidence_refs(result),
            },
        )

    def failed(
        self, error_code: str, message: str, *, problems: list[dict[str, Any]] | None = None
    ) -> None:
        self.fields.update(success=False, error_code=error_code)
        details = self.fields.setdefault("retrieval_details", {})
        details["error"] = message
        if problems:
            details["problems"] = problems
        if self.stages:
            self.fields["retrieval_details"]["stages_ms"] = _stages_ms(self.stages)

    def finish(self) -> AuditRecord:
        """The row, its text valid Unicode whatever the request or py-rag carried."""
        self.fields.setdefault("success", False)
        for name in ("error_code", "output_preview"):
            if isinstance(self.fields.get(name), str):
                self.fields[name] = escape_surrogates(self.fields[name])
        return AuditRecord(
            run_id=escape_surrogates(self.run_id),
            tool_call_id=escape_surrogates(self.tool_call_id),
            query=escape_surrogates(self.query),
            step_id=None if self.step_id is None else escape_surrogates(self.step_id),
            duration_ms=_ms_since(self.started),
            **self.fields,
        )

    @classmethod
    def refused(cls, body: object) -> AuditDraft:
        """The draft of a call refused before it ran, from whatever its JSON body held."""
        data: Mapping[str, Any] = body if isinstance(body, Mapping) else {}

        def field_text(snake: str, camel: str) -> str | None:
            value = data.get(snake, data.get(camel))
            if value is None:
                return None
            return value if isinstance(value, str) else json.dumps(value, default=str)[:256]

        return cls(
            run_id=field_text("run_id", "runId") or "",
            tool_call_id=field_text("tool_call_id", "toolCallId") or "",
            query=field_text("query", "query") or "",
            step_id=field_text("step_id", "stepId"),
        )

    def _result_fields(self, result: RagToolResult, body: bytes) -> None:
        self.fields.update(
            success=True,
            evidence_status=result.evidence_status.value,
            relevance_level=result.relevance_level.value if result.relevance_level else None,
            returned_count=result.returned_count,
            truncated=result.truncated,
            output_preview=body.decode("utf-8", errors="replace")[:OUTPUT_PREVIEW_CHARS],
        )


def _stages_ms(stages: dict[str, float]) -> dict[str, float]:
    return {name: round(seconds * 1000, 3) for name, seconds in stages.items()}


def _ms_since(started: float) -> int:
    return round((time.perf_counter() - started) * 1000)
