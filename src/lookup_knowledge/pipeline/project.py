"""Station 5 (docs/pipeline.md#project): a serialized LookupResult into the frozen agent contract.

The projector reads plain data (a LookupResult's `model_dump()`, or its JSON), not the
Python object, so internal models can change while the contract stays fixed; it accepts
snake_case and camelCase keys. Every cut sets `truncated`. The body is encoded once per
budget check, with orjson; those bytes are what is sent and ledgered.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from lookup_knowledge.domain.contract import RagEvidenceItem, RagToolResult
from lookup_knowledge.domain.errors import ProjectionOverBudget
from lookup_knowledge.domain.models import EvidenceStatus, ProjectionSummary, RelevanceLevel
from lookup_knowledge.pipeline.limits import ProjectionLimits

# Names of the gates, as recorded in the audit's projection summary.
CUT_QUERY = "query_chars"
CUT_COUNT = "max_evidence"
CUT_DUPLICATE = "duplicate_identity"
CUT_EXCERPT = "excerpt_chars"
CUT_EMPTY = "empty_excerpt"
CUT_BYTES = "max_bytes"


@dataclass(frozen=True, slots=True)
class Projection:
    result: RagToolResult
    body: bytes  # the exact bytes to send and to store in the ledger
    summary: ProjectionSummary


def encode(result: RagToolResult) -> bytes:
    """Compact UTF-8 JSON with non-ASCII unescaped: the bytes the byte budget is measured on."""
    return orjson.dumps(result.to_wire())


def project(lookup_json: str | bytes, *, tool_call_id: str, limits: ProjectionLimits) -> Projection:
    """Project a LookupResult serialized as JSON."""
    data = json.loads(lookup_json)
    if not isinstance(data, Mapping):
        raise ValueError("a serialized LookupResult must be a JSON object")
    return project_data(data, tool_call_id=tool_call_id, limits=limits)


def project_data(
    data: Mapping[str, Any], *, tool_call_id: str, limits: ProjectionLimits
) -> Projection:
    """Project a LookupResult's plain data (`model_dump()`: no JSON round trip)."""
    cuts: list[str] = []

    query = str(_get(data, "query") or "")
    if len(query) > limits.max_query_chars:
        query = query[: limits.max_query_chars]
        cuts.append(CUT_QUERY)

    items: list[RagEvidenceItem] = []
    emitted: set[str] = set()
    raw_blocks = _get(data, "evidence_blocks")
    blocks = raw_blocks if isinstance(raw_blocks, list | tuple) else ()
    for ordinal, raw in enumerate(blocks, start=1):
        if not isinstance(raw, Mapping):
            cuts.append(CUT_EMPTY)
            continue
        if len(items) >= limits.max_evidence:
            cuts.append(CUT_COUNT)
            break
        identity = _identity(raw, ordinal)
        if identity in emitted:
            cuts.append(CUT_DUPLICATE)
            continue
        excerpt = _text(_get(raw, "content")) or _text(_get(raw, "excerpt"))
        if not excerpt or not excerpt.strip():
            cuts.append(CUT_EMPTY)
            continue
        if len(excerpt) > limits.max_excerpt_chars:
            excerpt = excerpt[: limits.max_excerpt_chars]
            cuts.append(CUT_EXCERPT)
        emitted.add(identity)
        items.append(
            RagEvidenceItem(
                document_id=identity,
                source=_text(_get(raw, "source")),
                title=_text(_get(raw, "title")),
                breadcrumb=_text(_get(raw, "breadcrumb")),
                excerpt=excerpt,
            )
        )

    level = _level(_get(data, "relevance_level"))
    while True:
        result = _result(tool_call_id, query, items, level, truncated=bool(cuts))
        body = encode(result)
        if len(body) <= limits.max_bytes:
            break
        if not items:
            raise ProjectionOverBudget(
                f"an empty result is {len(body)} bytes, over the {limits.max_bytes}-byte budget"
            )
        items.pop()
        cuts.append(CUT_BYTES)

    return Projection(
        result=result,
        body=body,
        summary=ProjectionSummary(
            returned_count=result.returned_count,
            truncated=result.truncated,
            cuts=tuple(dict.fromkeys(cuts)),
            body_bytes=len(body),
        ),
    )


def _result(
    tool_call_id: str,
    query: str,
    items: list[RagEvidenceItem],
    level: RelevanceLevel | None,
    *,
    truncated: bool,
) -> RagToolResult:
    found = bool(items)
    return RagToolResult(
        evidence_status=EvidenceStatus.EVIDENCE_FOUND if found else EvidenceStatus.NO_EVIDENCE,
        tool_call_id=tool_call_id,
        query=query,
        evidence=tuple(items),
        returned_count=len(items),
        relevance_level=level if found else None,
        truncated=truncated,
    )


def _identity(block: Mapping[str, Any], ordinal: int) -> str:
    """The citation coordinate: evidence_key, else the document id — at chunk level when the
    chunk index is known (`doc_id#chunk-N`) — else `evidence-{ordinal}`."""
    key = _text(_get(block, "evidence_key"))
    if key:
        return key
    doc_id = _text(_get(block, "doc_id")) or _text(_get(block, "document_id"))
    chunk_index = _get(block, "chunk_index")
    if doc_id and isinstance(chunk_index, int) and not isinstance(chunk_index, bool):
        return f"{doc_id}#chunk-{chunk_index}"
    if doc_id:
        return doc_id
    return f"evidence-{ordinal}"


def _level(value: Any) -> RelevanceLevel | None:
    try:
        return RelevanceLevel(value)
    except ValueError:
        return None


def _text(value: Any) -> str | None:
    if isinstance(value, str) and value.strip():
        return value
    return None


def _get(data: Mapping[str, Any], snake: str) -> Any:
    """Read a key in snake_case, falling back to its camelCase spelling."""
    if snake in data:
        return data[snake]
    head, *rest = snake.split("_")
    return data.get(head + "".join(part.title() for part in rest))
