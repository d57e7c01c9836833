"""The py-rag client and its anti-corruption mapping, py-rag mocked by respx.

See docs/pyrag-api.md and docs/pipeline.md#adapter.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
import respx

from builders import pyrag_body, raw_hit
from lookup_knowledge.adapters.pyrag import PyragClient
from lookup_knowledge.domain.errors import UpstreamError, UpstreamTimeout

BASE = "http://pyrag.test"
SEARCH = f"{BASE}/api/v1/search"


@pytest.fixture
async def client():  # type: ignore[no-untyped-def]
    async with httpx.AsyncClient(base_url=BASE) as http:
        yield PyragClient(http, top_k=20, mode="hybrid")


async def search(client: PyragClient, body: Any, filters: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    with respx.mock(assert_all_called=True) as mock:
        route = mock.post(SEARCH).respond(200, json=body)
        outcome = await client.search("网关超时怎么排查", filters=filters)
        sent = json.loads(route.calls.last.request.content)
    return outcome, sent


async def test_the_request_carries_query_top_k_mode_and_filters(client: PyragClient) -> None:
    _, sent = await search(client, pyrag_body([]), filters={"category": "gateway"})
    assert sent == {
        "query": "网关超时怎么排查",
        "top_k": 20,
        "mode": "hybrid",
        "filters": {"category": "gateway"},
    }


async def test_filters_are_left_out_when_none_are_given(client: PyragClient) -> None:
    _, sent = await search(client, pyrag_body([]))
    assert "filters" not in sent


async def test_a_hit_is_mapped_field_by_field(client: PyragClient) -> None:
    outcome, _ = await search(client, pyrag_body([raw_hit("gw-timeout-md#chunk-1", 0.9147)]))
    (hit,) = outcome.hits
    assert hit.evidence_key == "gw-timeout-md#chunk-1"
    assert hit.doc_id == "gw-timeout-md"
    assert hit.chunk_index == 1
    assert hit.content == "Excerpt of gw-timeout-md#chunk-1."
    assert (hit.score, hit.score_label) == (0.9147, "rerank")
    assert hit.original_rank == 1
    assert hit.source == "runbooks/gw-timeout-md.md"
    assert hit.title == "Gw-Timeout-Md"
    assert hit.breadcrumb == "Gw-Timeout-Md > Steps"
    assert hit.hit_reasons == ("semantic_rank:1",)


async def test_a_key_without_a_chunk_suffix_has_no_chunk_index(client: PyragClient) -> None:
    outcome, _ = await search(client, pyrag_body([raw_hit("plain-doc")]))
    assert outcome.hits[0].chunk_index is None


async def test_py_rag_levels_and_unknown_fields_are_ignored(client: PyragClient) -> None:
    body = pyrag_body(
        [raw_hit("a#chunk-0", 0.2, relevance_level="PRECISE", extra={"x": 1})],
        new_top_level_field=[1, 2],
    )
    outcome, _ = await search(client, body)
    assert outcome.hits[0].score == 0.2
    assert outcome.upstream_status == "supported"
    assert outcome.retrieval_trace is not None and outcome.retrieval_trace["rerank_model"] == "test"


@pytest.mark.parametrize(
    ("hit_fields", "key"),
    [
        ({"evidence_key": None, "chunk_index": 3}, "a#chunk-3"),
        ({"evidence_key": None, "chunk_index": 0}, "a#chunk-0"),
        ({"evidence_key": None, "chunk_index": 2.0}, "a#chunk-2"),
        ({"evidence_key": None, "chunk_index": -1}, "a"),
        ({"evidence_key": None, "chunk_index": True}, "a"),
        ({"evidence_key": "", "chunk_index": 3}, "a#chunk-3"),
        ({"evidence_key": "  "}, "a"),
        ({"evidence_key": None, "chunk_index": "3"}, "a"),
    ],
)
async def test_a_missing_key_falls_back_to_the_document_id(
    client: PyragClient, hit_fields: dict[str, Any], key: str
) -> None:
    outcome, _ = await search(client, pyrag_body([raw_hit("a#chunk-0", **hit_fields)]))
    assert outcome.hits[0].evidence_key == key
    assert outcome.hits[0].doc_id == "a"


async def test_a_missing_document_id_is_taken_from_the_key(client: PyragClient) -> None:
    outcome, _ = await search(client, pyrag_body([raw_hit("a#chunk-2", document_id=None)]))
    assert (outcome.hits[0].doc_id, outcome.hits[0].chunk_index) == ("a", 2)


@pytest.mark.parametrize(
    ("key", "doc_id", "chunk_index"),
    [
        ("a#chunk-12", "a", 12),
        ("a#chunk-1#chunk-2", "a#chunk-1", 2),  # only the last suffix is the chunk's
        ("a#chunk-x", "a#chunk-x", None),
        ("a#chunk-", "a#chunk-", None),
        ("a#chunk-3\n", "a", 3),  # the suffix pattern's `$` allows one final newline
        ("a#chunk-\u0663", "a", 3),  # a decimal digit of another script
        ("plain-key", "plain-key", None),
    ],
)
async def test_the_chunk_suffix_of_a_key_names_the_document_and_the_chunk(
    client: PyragClient, key: str, doc_id: str, chunk_index: int | None
) -> None:
    outcome, _ = await search(client, pyrag_body([raw_hit(key, document_id=None)]))
    assert (outcome.hits[0].doc_id, outcome.hits[0].chunk_index) == (doc_id, chunk_index)


async def test_bad_hits_are_dropped_counted_and_keep_their_rank_slot(client: PyragClient) -> None:
    hits = [
        raw_hit("a#chunk-0"),
        raw_hit(None, document_id=None),  # neither key nor document id
        raw_hit("b#chunk-0", excerpt="   "),  # blank excerpt
        "not an object",
        raw_hit("c#chunk-0", excerpt=None),  # missing excerpt
        raw_hit("d#chunk-0"),
    ]
    outcome, _ = await search(client, pyrag_body(hits))
    assert [(h.evidence_key, h.original_rank) for h in outcome.hits] == [
        ("a#chunk-0", 1),
        ("d#chunk-0", 6),
    ]
    assert (outcome.hit_count, outcome.dropped_invalid) == (6, 4)


@pytest.mark.parametrize("score", [None, "0.9", "high", True, [0.9], {"v": 1}])
async def test_a_missing_or_non_numeric_score_counts_as_zero(
    client: PyragClient, score: Any
) -> None:
    outcome, _ = await search(client, pyrag_body([raw_hit("a#chunk-0", score)]))
    assert outcome.hits[0].score == 0.0


async def test_a_non_finite_score_counts_as_zero(client: PyragClient) -> None:
    body = json.dumps(pyrag_body([raw_hit("a#chunk-0", 0.5)])).replace("0.5", "NaN")
    with respx.mock() as mock:
        mock.post(SEARCH).respond(200, content=body, headers={"content-type": "application/json"})
        outcome = await client.search("q", filters=None)
    assert outcome.hits[0].score == 0.0


async def test_an_out_of_range_score_is_kept_for_the_postprocessor_to_clamp(
    client: PyragClient,
) -> None:
    outcome, _ = await search(client, pyrag_body([raw_hit("a#chunk-0", 10**400)]))
    assert outcome.hits[0].score == 0.0  # not representable as a float: counts as missing
    outcome, _ = await search(client, pyrag_body([raw_hit("a#chunk-0", 7)]))
    assert outcome.hits[0].score == 7.0


async def test_no_evidence_is_a_normal_answer(client: PyragClient) -> None:
    body = pyrag_body([], retrieval_trace={"no_evidence_basis": "all_below_threshold"})
    outcome, _ = await search(client, body)
    assert outcome.hits == ()
    assert outcome.upstream_status == "no_evidence"


@pytest.mark.parametrize(
    ("response", "kind"),
    [
        (httpx.Response(500, json={"detail": "boom"}), "status"),
        (httpx.Response(404), "status"),
        (httpx.Response(200, content=b"<html>not json</html>"), "bad_body"),
        (httpx.Response(200, json={"hits": "nope"}), "bad_body"),
        (httpx.Response(200, json={"no_hits": []}), "bad_body"),
        (httpx.Response(200, json=[1, 2]), "bad_body"),
    ],
)
async def test_unusable_answers_are_upstream_errors(
    client: PyragClient, response: httpx.Response, kind: str
) -> None:
    with respx.mock() as mock:
        mock.post(SEARCH).mock(return_value=response)
        with pytest.raises(UpstreamError) as caught:
            await client.search("q", filters=None)
    assert caught.value.kind == kind
    assert caught.value.code == "UPSTREAM_ERROR"


async def test_an_unreachable_py_rag_is_an_upstream_error(client: PyragClient) -> None:
    with respx.mock() as mock:
        mock.post(SEARCH).mock(side_effect=httpx.ConnectError("refused"))
        with pytest.raises(UpstreamError) as caught:
            await client.search("q", filters=None)
    assert caught.value.kind == "unreachable"
    assert not isinstance(caught.value, UpstreamTimeout)


async def test_a_transport_timeout_is_an_upstream_timeout(client: PyragClient) -> None:
    with respx.mock() as mock:
        mock.post(SEARCH).mock(side_effect=httpx.ReadTimeout("slow"))
        with pytest.raises(UpstreamTimeout) as caught:
            await client.search("q", filters=None)
    assert caught.value.code == "UPSTREAM_TIMEOUT"


# --- untrusted size (docs/audit.md#bounds) ---


class CountingStream(httpx.AsyncByteStream):
    """A py-rag body of `total` bytes in 64 KiB chunks that counts what was read of it."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.sent = 0

    async def __aiter__(self):  # type: ignore[no-untyped-def,override]
        chunk = b" " * 65536
        while self.sent < self.total:
            self.sent += len(chunk)
            yield chunk


async def test_a_body_over_the_cap_is_an_upstream_error_and_nothing_past_the_cap_is_read() -> None:
    body = CountingStream(20 * 1024 * 1024)
    async with httpx.AsyncClient(base_url=BASE) as http:
        capped = PyragClient(http, top_k=20, mode="hybrid", max_body_bytes=1_000_000)
        with respx.mock() as mock:
            mock.post(SEARCH).mock(return_value=httpx.Response(200, stream=body))
            with pytest.raises(UpstreamError) as raised:
                await capped.search("q", filters=None)
    assert (raised.value.status_code, raised.value.kind) == (502, "too_large")
    assert "1000000 bytes" in raised.value.message
    assert body.sent <= 1_000_000 + 65536


async def test_a_declared_length_over_the_cap_is_refused_before_reading() -> None:
    body = CountingStream(10)
    async with httpx.AsyncClient(base_url=BASE) as http:
        capped = PyragClient(http, top_k=20, mode="hybrid", max_body_bytes=1024)
        with respx.mock() as mock:
            response = httpx.Response(200, stream=body, headers={"content-length": "20000000"})
            mock.post(SEARCH).mock(return_value=response)
            with pytest.raises(UpstreamError, match="over 1024 bytes"):
                await capped.search("q", filters=None)
    assert body.sent == 0


async def test_a_trace_nested_40_deep_is_kept_to_the_bound_and_marked(client: PyragClient) -> None:
    trace: dict[str, Any] = {"leaf": 1}
    for _ in range(39):
        trace = {"down": trace}

    outcome, _ = await search(client, pyrag_body([raw_hit("a#chunk-0")], retrieval_trace=trace))

    kept, depth = outcome.retrieval_trace, 0
    while isinstance(kept, dict):
        kept, depth = kept.get("down"), depth + 1
    assert depth == 15 and kept == "…"
    assert outcome.trace_truncated is True
    assert [h.evidence_key for h in outcome.hits] == ["a#chunk-0"]


async def test_a_trace_of_3_mb_is_cut_to_the_size_bound_and_the_hits_survive() -> None:
    trace = {"mode": "hybrid", "debug": "d" * 3_000_000}
    async with httpx.AsyncClient(base_url=BASE) as http:
        bounded = PyragClient(http, top_k=20, mode="hybrid", trace_max_bytes=32768)
        outcome, _ = await search(
            bounded, pyrag_body([raw_hit("a#chunk-0")], retrieval_trace=trace)
        )

    assert outcome.trace_truncated is True
    assert outcome.retrieval_trace is not None and outcome.retrieval_trace["mode"] == "hybrid"
    assert len(json.dumps(outcome.retrieval_trace)) <= 32768 * 1.1
    assert len(outcome.hits) == 1


async def test_an_ordinary_trace_is_kept_as_is(client: PyragClient) -> None:
    body = pyrag_body([raw_hit("a#chunk-0")])

    outcome, _ = await search(client, body)

    assert outcome.retrieval_trace == body["retrieval_trace"]
    assert outcome.trace_truncated is False


async def test_a_base_url_with_a_path_keeps_it_on_every_call() -> None:
    """py-rag behind a path prefix: each call goes under it, the first and the later ones."""
    async with httpx.AsyncClient(base_url=f"{BASE}/rag/") as http:
        prefixed = PyragClient(http, top_k=20, mode="hybrid")
        with respx.mock(assert_all_called=True) as mock:
            route = mock.post(f"{BASE}/rag/api/v1/search").respond(200, json=pyrag_body([]))
            await prefixed.search("q", filters=None)
            await prefixed.search("q", filters=None)
    assert route.call_count == 2
