"""`lookup_knowledge.client`: each error status as its typed exception, and the safe retries.

Statuses come from the real app (over ASGITransport, py-rag mocked by respx) wherever the app
can produce them; the retry rules are also driven by a scripted `httpx.MockTransport`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
import respx

from builders import pyrag_body, raw_hit
from lookup_knowledge.client import (
    ApiError,
    AsyncLookupClient,
    ConflictError,
    Forbidden,
    GuardReport,
    InternalError,
    InvalidRequest,
    LedgerUnavailable,
    NotFound,
    Overloaded,
    PayloadTooLarge,
    RetryPolicy,
    TransportError,
    Unauthorized,
    UpstreamError,
    UpstreamTimeout,
)
from lookup_knowledge.client.errors import error_from_response
from support import PYRAG_SEARCH_URL, OpenClient

FAST = RetryPolicy(backoff_s=0.0, jitter=False)
HITS = pyrag_body([raw_hit("gw#chunk-1", 0.9), raw_hit("gw#chunk-2", 0.6)])


@asynccontextmanager
async def lk(open_client: OpenClient, **settings: Any) -> AsyncIterator[AsyncLookupClient]:
    tokens = {k: settings.pop(k) for k in ("token", "ledger_token") if k in settings}
    async with open_client(**settings) as http:
        yield AsyncLookupClient(http_client=http, retry=FAST, **tokens)


async def test_a_lookup_answers_the_typed_result_and_its_exact_bytes(
    open_client: OpenClient,
) -> None:
    async with lk(open_client) as client:
        with respx.mock() as mock:
            mock.post(PYRAG_SEARCH_URL).respond(200, json=HITS)
            first = await client.lookup("网关超时", run_id="run-c", tool_call_id="c1")
            again = await client.lookup("网关超时", run_id="run-c", tool_call_id="c1")
        entry = await client.ledger_entry("run-c", "c1")
        listing = await client.run_ledger("run-c")
    assert [i.document_id for i in first.result.evidence] == ["gw#chunk-1", "gw#chunk-2"]
    assert first.replayed is False and again.replayed is True and again.body == first.body
    assert entry.status == "READY" and entry.result == first.result
    assert first.body.decode() in entry.raw.decode()
    assert [e.tool_call_id for e in listing.entries] == ["c1"] and listing.entries[0].result is None


async def test_a_missing_tool_call_id_is_generated_once_and_returned(
    open_client: OpenClient,
) -> None:
    async with lk(open_client) as client:
        with respx.mock() as mock:
            mock.post(PYRAG_SEARCH_URL).respond(200, json=HITS)
            answer = await client.lookup("q", run_id="run-g")
    assert answer.tool_call_id.startswith("lk-")
    assert answer.result.tool_call_id == answer.tool_call_id


async def test_statuses_the_app_produces_become_typed_errors(open_client: OpenClient) -> None:
    async with lk(open_client, token="agent", ledger_token="guard") as client:
        with pytest.raises(InvalidRequest) as invalid:
            await client.lookup("   ", run_id="run-e", tool_call_id="c1")
        with pytest.raises(NotFound):
            await client.ledger_entry("run-e", "nothing")
        with pytest.raises(PayloadTooLarge):
            await client.lookup("x" * 70_000, run_id="run-e", tool_call_id="c2")
        with respx.mock() as mock:
            mock.post(PYRAG_SEARCH_URL).respond(500)
            with pytest.raises(UpstreamError) as upstream:
                await client.lookup("q", run_id="run-e", tool_call_id="c3")
            mock.post(PYRAG_SEARCH_URL).mock(side_effect=httpx.ReadTimeout("slow"))
            with pytest.raises(UpstreamTimeout):
                await client.lookup("q", run_id="run-e", tool_call_id="c4")
            mock.post(PYRAG_SEARCH_URL).respond(200, json=HITS)
            await client.lookup("q", run_id="run-e", tool_call_id="c5")
            with pytest.raises(ConflictError) as conflict:
                await client.lookup("another query", run_id="run-e", tool_call_id="c5")
    assert invalid.value.status == 422 and invalid.value.code == "INVALID_REQUEST"
    assert upstream.value.status == 502 and not isinstance(upstream.value, UpstreamTimeout)
    assert conflict.value.reason == "query_mismatch" and not conflict.value.retryable


async def test_tokens_of_the_wrong_role_are_unauthorized_or_forbidden(
    open_client: OpenClient,
) -> None:
    async with open_client(lookup_api_tokens="agent", ledger_api_tokens="guard") as http:
        nobody = AsyncLookupClient(http_client=http, retry=FAST)
        swapped = AsyncLookupClient(http_client=http, token="guard", ledger_token="agent")
        with pytest.raises(Unauthorized):
            await nobody.lookup("q", run_id="run-a", tool_call_id="c1")
        with pytest.raises(Forbidden):
            await swapped.lookup("q", run_id="run-a", tool_call_id="c1")
        with pytest.raises(Forbidden):
            await swapped.ledger_entry("run-a", "c1")


async def test_an_unwritable_ledger_is_ledger_unavailable_and_not_retried(
    open_client: OpenClient,
) -> None:
    async with lk(open_client, redis_url="redis://127.0.0.1:1/0") as client:
        with respx.mock(assert_all_called=False) as mock:
            route = mock.post(PYRAG_SEARCH_URL).respond(200, json=HITS)
            with pytest.raises(LedgerUnavailable) as error:
                await client.lookup("q", run_id="run-l", tool_call_id="c1")
    assert error.value.status == 503 and route.call_count == 0


async def test_a_lost_response_is_replayed_not_run_twice(open_client: OpenClient) -> None:
    """The first answer is lost on the way back; the retry gets the ledgered bytes."""
    async with open_client() as http:
        app_transport = http._transport  # the ASGITransport onto the real app
        lost: list[bytes] = []

        class LoseFirstAnswer(httpx.AsyncBaseTransport):
            async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
                response = await app_transport.handle_async_request(request)
                if not lost:
                    lost.append(await response.aread())
                    raise httpx.ReadError("connection reset", request=request)
                return response

        flaky = httpx.AsyncClient(transport=LoseFirstAnswer(), base_url="http://lk.test")
        client = AsyncLookupClient(http_client=flaky, retry=FAST)
        with respx.mock() as mock:
            route = mock.post(PYRAG_SEARCH_URL).respond(200, json=HITS)
            answer = await client.lookup("网关超时", run_id="run-r", tool_call_id="c1")
    assert route.call_count == 1
    assert answer.replayed is True and answer.attempts == 2
    assert answer.body == lost[0]


Script = list[httpx.Response | Exception]


def scripted(script: Script, seen: list[httpx.Request]) -> httpx.MockTransport:
    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        step = script.pop(0)
        if isinstance(step, Exception):
            raise step
        return step

    return httpx.MockTransport(handler)


def envelope(status: int, code: str, **details: Any) -> Callable[..., httpx.Response]:
    def make(**headers: str) -> httpx.Response:
        body = {"error": {"code": code, "message": code.lower(), "details": details or None}}
        return httpx.Response(status, json=body, headers=headers)

    return make


ANSWER = httpx.Response(
    200,
    content=b'{"evidence_status":"NO_EVIDENCE","tool_call_id":"c1","query":"q",'
    b'"returned_count":0,"truncated":false}',
)


@pytest.mark.parametrize(
    "first",
    [
        httpx.ConnectError("refused"),
        httpx.ReadTimeout("no answer"),
        envelope(503, "OVERLOADED")(**{"Retry-After": "0"}),
        envelope(409, "CONFLICT", reason="in_flight")(),
        envelope(409, "CONFLICT", reason="completed_first")(),
    ],
    ids=["connect", "read-timeout", "overloaded", "in-flight", "completed-first"],
)
async def test_safe_failures_are_sent_again_with_the_same_ids(first: Any) -> None:
    seen: list[httpx.Request] = []
    http = httpx.AsyncClient(transport=scripted([first, ANSWER], seen), base_url="http://lk")
    answer = await AsyncLookupClient(http_client=http, retry=FAST).lookup("q", run_id="run-1")
    assert answer.attempts == 2 and answer.result.evidence_status == "NO_EVIDENCE"
    bodies = [json.loads(r.content) for r in seen]
    assert bodies[0] == bodies[1] and bodies[0]["tool_call_id"] == answer.tool_call_id


@pytest.mark.parametrize(
    ("status", "code", "error"),
    [
        (409, "CONFLICT", ConflictError),
        (502, "UPSTREAM_ERROR", UpstreamError),
        (503, "LEDGER_UNAVAILABLE", LedgerUnavailable),
        (500, "INTERNAL_ERROR", InternalError),
        (500, "PROJECTION_OVER_BUDGET", InternalError),
        (405, "METHOD_NOT_ALLOWED", ApiError),
    ],
)
async def test_other_failures_are_raised_after_one_attempt(
    status: int, code: str, error: type[ApiError]
) -> None:
    seen: list[httpx.Request] = []
    script: Script = [envelope(status, code, reason="query_mismatch")(), ANSWER]
    http = httpx.AsyncClient(transport=scripted(script, seen), base_url="http://lk")
    with pytest.raises(error) as raised:
        await AsyncLookupClient(http_client=http, retry=FAST).lookup("q", run_id="run-1")
    assert len(seen) == 1 and raised.value.code == code and raised.value.status == status


async def test_retries_are_bounded_and_the_last_error_is_raised() -> None:
    seen: list[httpx.Request] = []
    script: Script = [envelope(503, "OVERLOADED")(**{"Retry-After": "0"}) for _ in range(5)]
    http = httpx.AsyncClient(transport=scripted(script, seen), base_url="http://lk")
    client = AsyncLookupClient(http_client=http, retry=RetryPolicy(max_attempts=3, jitter=False))
    with pytest.raises(Overloaded) as raised:
        await client.lookup("q", run_id="run-1")
    assert len(seen) == 3 and raised.value.retry_after == 0.0


async def test_no_answer_at_all_ends_as_a_transport_error() -> None:
    seen: list[httpx.Request] = []
    script: Script = [httpx.ConnectError("refused") for _ in range(4)]
    http = httpx.AsyncClient(transport=scripted(script, seen), base_url="http://lk")
    with pytest.raises(TransportError) as raised:
        await AsyncLookupClient(http_client=http, retry=FAST).lookup("q", run_id="run-1")
    assert len(seen) == 4 and isinstance(raised.value.__cause__, httpx.ConnectError)


def test_overloaded_waits_as_long_as_retry_after_says_within_the_cap() -> None:
    policy = RetryPolicy(max_retry_after_s=10.0)
    soon = error_from_response(envelope(503, "OVERLOADED")(**{"Retry-After": "3"}))
    late = error_from_response(envelope(503, "OVERLOADED")(**{"Retry-After": "120"}))
    assert policy.delay(1, soon) == 3.0 and policy.delay(1, late) == 10.0
    assert policy.delay(policy.max_attempts, soon) is None


def test_an_answer_without_an_envelope_keeps_its_status_class() -> None:
    error = error_from_response(httpx.Response(502, text="<html>bad gateway</html>"))
    assert isinstance(error, UpstreamError) and error.code == "HTTP_502"
    unknown = error_from_response(envelope(503, "SOMETHING_NEW")())
    assert type(unknown).__name__ == "ServerError" and unknown.code == "SOMETHING_NEW"


async def test_verify_report_returns_the_guards_verdict_and_types_its_errors(
    open_client: OpenClient,
) -> None:
    async with lk(
        open_client, ledger_api_tokens="guard", token=None, ledger_token="guard"
    ) as client:
        with respx.mock() as mock:
            mock.post(PYRAG_SEARCH_URL).respond(200, json=HITS)
            await client.lookup("网关超时", run_id="run-v", tool_call_id="c1")
        cited = {"tool_call_id": "c1", "kind": "NORMAL", "document_id": "gw#chunk-1"}
        report = GuardReport(
            analyses=[{"id": "a1", "text": "Raise the upstream timeout.", "citations": [cited]}],
            limitations=["Only the gateway runbook was consulted."],
        )
        good = await client.verify_report(report, run_id="run-v")
        forged = report.model_dump(mode="json")
        forged["analyses"][0]["citations"][0]["document_id"] = "gw#chunk-9"
        bad = await client.verify_report(forged, run_id="run-v")
        with pytest.raises(InvalidRequest):
            await client.verify_report({"analyses": "none"}, run_id="run-v")
        agent = AsyncLookupClient(http_client=client._http, token="agent", ledger_token="agent")
        with pytest.raises(Unauthorized):
            await agent.verify_report(report, run_id="run-v")
    assert good.ok is True and good.violations == []
    assert [s.document_id for s in good.evidence_snapshot] == ["gw#chunk-1"]
    assert bad.ok is False and bad.violations[0].code == "DOCUMENT_NOT_IN_RESULT"
