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
from typing import Any, Literal

import httpx
import orjson
from pydantic import BaseModel, ConfigDict

from lookup_knowledge.domain.errors import Overloaded, UpstreamError, UpstreamTimeout
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
_JSON_CONTENT = {"content-type": "application/json"}


class _RawSearchResponse(BaseModel):
    """The top level of py-rag's answer; hits are validated one by one, leniently."""

    model_config = ConfigDict(extra="ignore")

    hits: list[Any]
    evidence_status: Any = None
    retrieval_trace: Any = None


def pyrag_http_client(
    base_url: str,
    *,
    connect_timeout_s: float,
    timeout_s: float,
    pool_timeout_s: float,
    max_connections: int,
    transport: Literal["aiohttp", "httpx"] = "aiohttp",
) -> httpx.AsyncClient:
    """The pooled client to py-rag; each timeout bounds one thing (docs/pyrag-api.md#timeouts).

    Every connection may stay open for reuse: closing surplus idle ones would make new ones
    under load, paying a TCP handshake per lookup. The wire is aiohttp's by default
    (adapters/pyrag_transport.py), or httpx's own.
    """
    limits = httpx.Limits(
        max_connections=max_connections, max_keepalive_connections=max_connections
    )
    wire: httpx.AsyncBaseTransport | None = None
    if transport == "aiohttp":
        # Imported here: aiohttp is a tenth of a second of start-up that the embedded engine,
        # reached in memory, never needs (docs/performance.md#start-up).
        from lookup_knowledge.adapters.pyrag_transport import AiohttpTransport

        wire = AiohttpTransport(
            max_connections=max_connections, keepalive_expiry_s=limits.keepalive_expiry or 5.0
        )
    return httpx.AsyncClient(
        base_url=base_url,
        timeout=httpx.Timeout(
            connect=connect_timeout_s, read=timeout_s, write=timeout_s, pool=pool_timeout_s
        ),
        limits=limits,
        transport=wire,
    )


class PyragClient:
    """One pooled httpx client per process; one attempt per lookup, bounded by its timeouts."""

    def __init__(
        self,
        client: httpx.AsyncClient,
        *,
        top_k: int,
        mode: str,
        max_body_bytes: int = MAX_BODY_BYTES,
        trace_max_depth: int = TRACE_MAX_DEPTH,
        trace_max_bytes: int = TRACE_MAX_BYTES,
    ) -> None:
        self._client = client
        self._top_k = top_k
        self._mode = mode
        self._max_body_bytes = max_body_bytes
        self._trace_bounds = {"max_depth": trace_max_depth, "max_bytes": trace_max_bytes}
        self._orphans: set[asyncio.Future[httpx.Response]] = set()
        self._urls: dict[str, httpx.URL] = {}

    async def aclose(self) -> None:
        """Stop calls whose callers went away; the pool is closing anyway."""
        for call in list(self._orphans):
            call.cancel()
        await asyncio.gather(*self._orphans, return_exceptions=True)

    async def search(self, query: str, *, filters: Mapping[str, str] | None) -> SearchOutcome:
        payload: dict[str, Any] = {"query": query, "top_k": self._top_k, "mode": self._mode}
        if filters:
            payload["filters"] = dict(filters)
        response = await self._send(
            "POST", SEARCH_PATH, content=orjson.dumps(payload), headers=_JSON_CONTENT
        )
        if not response.is_success:
            raise UpstreamError(
                f"py-rag answered HTTP {response.status_code}",
                kind="status",
                details={"status": response.status_code},
            )
        return parse_search_body(response.content, **self._trace_bounds)

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
        """One call, bounded by httpx's own timeouts and never cancelled from outside.

        A cancellation that reaches httpcore's pool while a request waits for a connection can
        orphan a connection slot for good (encode/httpcore#1093); enough of them and every
        later call waits out the pool timeout. So the call runs in its own task: a caller that
        goes away (a deadline, a readiness probe's timeout) leaves it to finish on its own.
        """
        call = asyncio.ensure_future(self._fetch(method, path, **kwargs))
        try:
            return await asyncio.shield(call)
        except asyncio.CancelledError:
            self._orphans.add(call)
            call.add_done_callback(self._orphans.discard)
            call.add_done_callback(_drop_outcome)
            raise
        except httpx.PoolTimeout as exc:
            raise Overloaded(
                "every connection to py-rag is in use; this service is at its limit",
                details={"pool": "pyrag"},
            ) from exc
        except httpx.ConnectTimeout as exc:
            raise UpstreamTimeout(
                f"py-rag did not accept a connection within {_timeout(exc, 'connect')}"
            ) from exc
        except httpx.TimeoutException as exc:
            raise UpstreamTimeout(f"py-rag did not answer within {_timeout(exc, 'read')}") from exc
        except httpx.HTTPError as exc:
            raise UpstreamError(f"py-rag is unreachable: {exc!r}", kind="unreachable") from exc

    def _url(self, path: str) -> httpx.URL:
        """The absolute URL of a py-rag path, merged with the base URL once: httpx re-parses a
        relative path on every request (docs/performance.md#py-rag-client)."""
        url = self._urls.get(path)
        if url is None:
            url = self._urls[path] = self._client.build_request("GET", path).url
        return url

    async def _fetch(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        async with self._client.stream(method, self._url(path), **kwargs) as response:
            content = await read_capped(response, self._max_body_bytes)
            return httpx.Response(response.status_code, content=content)


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


def _timeout(exc: httpx.TimeoutException, kind: str) -> str:
    try:
        seconds = exc.request.extensions["timeout"][kind]
    except (RuntimeError, KeyError, TypeError):
        return "its timeout"
    return f"{seconds:g} s"


def _drop_outcome(call: asyncio.Future[httpx.Response]) -> None:
    """Collect a finished orphaned call's exception so asyncio does not log it."""
    if not call.cancelled():
        call.exception()


def parse_search_body(
    body: bytes, *, max_depth: int = TRACE_MAX_DEPTH, max_bytes: int = TRACE_MAX_BYTES
) -> SearchOutcome:
    """py-rag's search answer, decoded once, as the pipeline's SearchOutcome.

    orjson decodes the usual body; what it refuses (NaN, numbers past 64 bits) goes through
    pydantic's lenient JSON parser, so both read the same bodies.
    """
    try:
        data = orjson.loads(body)
        raw = _RawSearchResponse.model_construct(
            hits=data["hits"],
            evidence_status=data.get("evidence_status"),
            retrieval_trace=data.get("retrieval_trace"),
        )
        if not isinstance(raw.hits, list):
            raise ValueError("hits is not a list")
    except (orjson.JSONDecodeError, KeyError, TypeError, AttributeError, ValueError):
        try:
            raw = _RawSearchResponse.model_validate_json(body)
        except ValueError as exc:
            raise UpstreamError(
                "py-rag answered a body that is not a search response (JSON with a hits list)",
                kind="bad_body",
            ) from exc
    return to_outcome(raw, max_depth=max_depth, max_bytes=max_bytes)


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
    """Map one raw hit; None when it has no identity or no text (dropped and counted).

    A well-formed hit (a dict, non-blank strings, a finite float score, a key ending in
    `#chunk-<digits>`) takes the plain type tests only; anything else goes through the same
    checks as before (`_text`, `_score`, the suffix pattern). The hit is built positionally:
    a named tuple's keyword call costs twice as much (docs/performance.md#pure-cpu).
    """
    if type(item) is not dict and not isinstance(item, Mapping):
        return None
    get = item.get
    excerpt = get("excerpt")
    if type(excerpt) is not str or not excerpt or excerpt.isspace():
        excerpt = _text(excerpt)
    document_id = get("document_id")
    if type(document_id) is not str or not document_id or document_id.isspace():
        document_id = _text(document_id)
    key = get("evidence_key")
    if type(key) is not str or not key or key.isspace():
        key = _text(key)
    if key is None and document_id is not None:
        chunk = _index(get("chunk_index"))
        key = document_id if chunk is None else f"{document_id}#chunk-{chunk}"
    if key is None or excerpt is None:
        return None
    # Only the last "#chunk-" can be followed by nothing but digits: look from there.
    chunk_index: int | None = None
    at = key.rfind("#chunk-")
    if at >= 0:
        digits = key[at + 7 :]
        if digits.isdecimal():
            chunk_index = int(digits)
        else:  # the pattern's own reading (`$` also matches before a final newline)
            match = _CHUNK_SUFFIX.search(key, at)
            if match is None:
                at = -1
            else:
                chunk_index = int(match.group(1))
    score = get("quality_score")
    if type(score) is not float or not math.isfinite(score):
        score = _score(score)
    source, title, breadcrumb = get("source"), get("title"), get("breadcrumb")
    return KnowledgeSearchHit(
        key,
        document_id or (key[:at] if at >= 0 else key),
        excerpt,
        score,
        rank,
        chunk_index,
        SCORE_LABEL,
        source if type(source) is str and source and not source.isspace() else _text(source),
        title if type(title) is str and title and not title.isspace() else _text(title),
        breadcrumb
        if type(breadcrumb) is str and breadcrumb and not breadcrumb.isspace()
        else _text(breadcrumb),
        _REASONS[rank] if rank < len(_REASONS) else (f"semantic_rank:{rank}",),
    )


# The one reason of a hit, by rank: the same tuple for every lookup.
_REASONS = tuple((f"semantic_rank:{rank}",) for rank in range(257))


def _text(value: Any) -> str | None:
    """A non-blank string as is; numbers (ids) as their text; anything else is absent."""
    if type(value) is str:  # the usual case, first
        return value if value.strip() else None
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
    if type(value) is float:  # the usual case, first
        return value if math.isfinite(value) else 0.0
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0.0
    try:
        score = float(value)
    except OverflowError:
        return 0.0
    return score if math.isfinite(score) else 0.0
