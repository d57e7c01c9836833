"""The py-rag client and its anti-corruption layer (docs/pyrag-api.md, docs/pipeline.md#adapter).

py-rag's raw JSON stays inside this module; the pipeline only ever sees KnowledgeSearchHit.
Bad hits never crash a call: they are dropped and counted, and bad scores count as 0.
Untrusted size is bounded here: the body is read up to `max_body_bytes` and no further, and the
`retrieval_trace` kept for the audit is cut to a depth and size (docs/audit.md#bounds).
"""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import Mapping
from typing import Any

import httpx
from pydantic import BaseModel, ConfigDict

from lookup_knowledge.domain.errors import UpstreamError, UpstreamTimeout
from lookup_knowledge.domain.jsonsafe import bound_json
from lookup_knowledge.domain.models import JsonObject, KnowledgeSearchHit, SearchOutcome

SEARCH_PATH = "/api/v1/search"
HEALTH_PATH = "/api/v1/health"
CATEGORIES_PATH = "/api/v1/categories"
SCORE_LABEL = "rerank"
_CHUNK_SUFFIX = re.compile(r"#chunk-(\d+)$")
MAX_BODY_BYTES = 4 * 1024 * 1024
TRACE_MAX_DEPTH = 15
TRACE_MAX_BYTES = 32 * 1024


class _RawSearchResponse(BaseModel):
    """The top level of py-rag's answer; hits are validated one by one, leniently."""

    model_config = ConfigDict(extra="ignore")

    hits: list[Any]
    evidence_status: Any = None
    retrieval_trace: Any = None


class PyragClient:
    """One pooled httpx client per process; one attempt per lookup, bounded by the timeout."""

    def __init__(
        self,
        client: httpx.AsyncClient,
        *,
        timeout_s: float,
        top_k: int,
        mode: str,
        max_body_bytes: int = MAX_BODY_BYTES,
        trace_max_depth: int = TRACE_MAX_DEPTH,
        trace_max_bytes: int = TRACE_MAX_BYTES,
    ) -> None:
        self._client = client
        self._timeout_s = timeout_s
        self._top_k = top_k
        self._mode = mode
        self._max_body_bytes = max_body_bytes
        self._trace_bounds = {"max_depth": trace_max_depth, "max_bytes": trace_max_bytes}

    async def search(self, query: str, *, filters: Mapping[str, str] | None) -> SearchOutcome:
        payload: dict[str, Any] = {"query": query, "top_k": self._top_k, "mode": self._mode}
        if filters:
            payload["filters"] = dict(filters)
        response = await self._send("POST", SEARCH_PATH, json=payload)
        if not response.is_success:
            raise UpstreamError(
                f"py-rag answered HTTP {response.status_code}",
                kind="status",
                details={"status": response.status_code},
            )
        try:
            raw = _RawSearchResponse.model_validate_json(response.content)
        except ValueError as exc:
            raise UpstreamError(
                "py-rag answered a body that is not a search response (JSON with a hits list)",
                kind="bad_body",
            ) from exc
        return to_outcome(raw, **self._trace_bounds)

    async def ping(self) -> None:
        """Reachability for /readyz: any answer below 500 on the health path counts (a py-rag
        without that path still answers, with 404)."""
        response = await self._send("GET", HEALTH_PATH)
        if response.status_code >= 500:
            raise UpstreamError(
                f"py-rag health answered HTTP {response.status_code}", kind="status"
            )

    async def categories(self) -> list[str] | None:
        """The filterable categories, or None when this py-rag does not list them (a service
        convention the embedded engine follows; see docs/pyrag-api.md#categories)."""
        response = await self._send("GET", CATEGORIES_PATH)
        if response.status_code in (404, 405, 501):
            return None
        if not response.is_success:
            raise UpstreamError(
                f"py-rag categories answered HTTP {response.status_code}", kind="status"
            )
        try:
            names = response.json()["categories"]
        except (ValueError, KeyError, TypeError) as exc:
            raise UpstreamError("py-rag categories body is unreadable", kind="bad_body") from exc
        if not isinstance(names, list):
            raise UpstreamError("py-rag categories is not a list", kind="bad_body")
        return [name for name in names if isinstance(name, str) and name.strip()]

    async def _send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            async with (
                asyncio.timeout(self._timeout_s),
                self._client.stream(method, path, **kwargs) as response,
            ):
                content = await read_capped(response, self._max_body_bytes)
                return httpx.Response(response.status_code, content=content)
        except (TimeoutError, httpx.TimeoutException) as exc:
            raise UpstreamTimeout(f"py-rag did not answer within {self._timeout_s:g} s") from exc
        except httpx.HTTPError as exc:
            raise UpstreamError(f"py-rag is unreachable: {exc!r}", kind="unreachable") from exc


async def read_capped(response: httpx.Response, limit: int) -> bytes:
    """The body, or UpstreamError once it passes `limit` bytes; nothing past that is read."""
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise _too_large(limit)
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > limit:
            raise _too_large(limit)
        chunks.append(chunk)
    return b"".join(chunks)


def _too_large(limit: int) -> UpstreamError:
    return UpstreamError(
        f"py-rag answered a body over {limit} bytes (PYRAG_MAX_BODY_BYTES)",
        kind="too_large",
        details={"max_bytes": limit},
    )


def to_outcome(
    raw: _RawSearchResponse,
    *,
    max_depth: int = TRACE_MAX_DEPTH,
    max_bytes: int = TRACE_MAX_BYTES,
) -> SearchOutcome:
    hits: list[KnowledgeSearchHit] = []
    for position, item in enumerate(raw.hits, start=1):
        hit = to_hit(item, rank=position)
        if hit is not None:
            hits.append(hit)
    status = raw.evidence_status if isinstance(raw.evidence_status, str) else "unknown"
    trace: JsonObject | None = None
    cut = False
    if isinstance(raw.retrieval_trace, dict):
        trace, cut = bound_json(raw.retrieval_trace, max_depth=max_depth, max_bytes=max_bytes)
    return SearchOutcome(
        hits=tuple(hits),
        upstream_status=status,
        retrieval_trace=trace,
        trace_truncated=cut,
        hit_count=len(raw.hits),
        dropped_invalid=len(raw.hits) - len(hits),
    )


def to_hit(item: Any, *, rank: int) -> KnowledgeSearchHit | None:
    """Map one raw hit; None when it has no identity or no text (dropped and counted)."""
    if not isinstance(item, Mapping):
        return None
    excerpt = _text(item.get("excerpt"))
    document_id = _text(item.get("document_id"))
    key = _text(item.get("evidence_key"))
    if key is None and document_id is not None:
        chunk = _index(item.get("chunk_index"))
        key = document_id if chunk is None else f"{document_id}#chunk-{chunk}"
    if key is None or excerpt is None:
        return None
    match = _CHUNK_SUFFIX.search(key)
    doc_id = document_id or (key[: match.start()] if match else key)
    return KnowledgeSearchHit(
        evidence_key=key,
        doc_id=doc_id,
        chunk_index=int(match.group(1)) if match else None,
        content=excerpt,
        score=_score(item.get("quality_score")),
        score_label=SCORE_LABEL,
        original_rank=rank,
        source=_text(item.get("source")),
        title=_text(item.get("title")),
        breadcrumb=_text(item.get("breadcrumb")),
        hit_reasons=(f"semantic_rank:{rank}",),
    )


def _text(value: Any) -> str | None:
    """A non-blank string as is; numbers (ids) as their text; anything else is absent."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float) and math.isfinite(value):
        value = str(value)
    if isinstance(value, str) and value.strip():
        return value
    return None


def _index(value: Any) -> int | None:
    """A numeric, non-negative, whole chunk index; anything else is absent."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        return None
    return int(value) if value >= 0 else None


def _score(value: Any) -> float:
    """A missing, non-numeric or non-finite quality_score counts as 0.0."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0.0
    try:
        score = float(value)
    except OverflowError:
        return 0.0
    return score if math.isfinite(score) else 0.0
