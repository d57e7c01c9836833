"""docs/ledger.md through the HTTP API: the ledger behind POST /lookup_knowledge, /ledger routes.

Parametrized over the in-process and a real Redis ledger (a redis-server private to the session);
py-rag is mocked by respx at the HTTP boundary.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import redis.asyncio as aioredis
import respx

from builders import pyrag_body, raw_hit
from lookup_knowledge.adapters.ledger_memory import MemoryLedger
from lookup_knowledge.adapters.ledger_redis import RedisLedger
from lookup_knowledge.domain.errors import LedgerUnavailable
from lookup_knowledge.domain.ledger import LedgerEntry, RunPage, sha256_hex
from lookup_knowledge.guard import CitationKind, verify_citation
from support import PYRAG_SEARCH_URL, OpenClient

CLOSED_PORT_URL = "redis://127.0.0.1:1/11"
LOOKUP = "/lookup_knowledge"
RUN = "run-42"
CALL = "call_x1"
QUERY = "网关超时怎么排查"
HITS = [raw_hit("gw#chunk-1", 0.91), raw_hit("nginx#chunk-2", 0.7)]

Ledger = MemoryLedger | RedisLedger


def lookup(query: str = QUERY, *, call: str = CALL, run: str = RUN) -> dict[str, Any]:
    return {"run_id": run, "tool_call_id": call, "query": query}


def assert_error(response: httpx.Response, status: int, code: str) -> None:
    assert response.status_code == status, response.text
    assert response.json()["error"]["code"] == code


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.redis)])
async def ledger(request: pytest.FixtureRequest) -> AsyncIterator[Ledger]:
    if request.param == "memory":
        yield MemoryLedger(ttl_s=3600, pending_ttl_s=30)
        return
    url = request.getfixturevalue("redis_url")
    client = aioredis.Redis.from_url(url)
    await client.flushdb()
    redis_ledger = RedisLedger.from_url(url, ttl_s=3600, pending_ttl_s=30)
    yield redis_ledger
    await redis_ledger.aclose()
    await client.flushdb()
    await client.aclose()


class CountingLedger:
    """Passes everything to the real ledger; lets a test wait until N claims were answered."""

    def __init__(self, inner: Ledger, *, expected_claims: int) -> None:
        self._inner = inner
        self._expected = expected_claims
        self.claims = 0
        self.all_claimed = asyncio.Event()

    async def claim(self, *args: Any, **kwargs: Any) -> LedgerEntry | None:
        try:
            return await self._inner.claim(*args, **kwargs)
        finally:
            self.claims += 1
            if self.claims >= self._expected:
                self.all_claimed.set()

    async def complete(self, *args: Any, **kwargs: Any) -> bool:
        return await self._inner.complete(*args, **kwargs)

    async def fail(self, *args: Any, **kwargs: Any) -> bool:
        return await self._inner.fail(*args, **kwargs)

    async def get(self, run_id: str, tool_call_id: str) -> LedgerEntry | None:
        return await self._inner.get(run_id, tool_call_id)

    async def list_run(self, run_id: str, **kwargs: Any) -> RunPage:
        return await self._inner.list_run(run_id, **kwargs)

    async def ping(self) -> None:
        await self._inner.ping()


class LedgerThatCannotComplete(CountingLedger):
    """The store goes away between the claim and the READY write."""

    async def complete(self, *args: Any, **kwargs: Any) -> bool:
        raise LedgerUnavailable("ledger complete failed: ConnectionError")


# -- concurrency -------------------------------------------------------------------------


async def test_sixteen_concurrent_identical_lookups_call_py_rag_once(
    open_client: OpenClient, ledger: Ledger
) -> None:
    counting = CountingLedger(ledger, expected_claims=16)

    async def pyrag(_: httpx.Request) -> httpx.Response:
        # Hold the one py-rag call until every lookup has tried to claim the ids.
        await asyncio.wait_for(counting.all_claimed.wait(), timeout=5)
        return httpx.Response(200, json=pyrag_body(HITS))

    async with open_client(ledger=counting) as client, respx.mock() as mock:
        route = mock.post(PYRAG_SEARCH_URL).mock(side_effect=pyrag)
        responses = await asyncio.gather(*(client.post(LOOKUP, json=lookup()) for _ in range(16)))
        replay = await client.post(LOOKUP, json=lookup())

    assert route.call_count == 1
    statuses = sorted(r.status_code for r in responses)
    assert statuses == [200] + [409] * 15
    for response in responses:
        if response.status_code == 409:
            assert_error(response, 409, "CONFLICT")
    (winner,) = (r for r in responses if r.status_code == 200)
    assert replay.status_code == 200
    assert replay.content == winner.content


# -- replay and conflicts ----------------------------------------------------------------


async def test_a_replay_is_byte_identical_and_its_sha_is_in_the_ledger(
    open_client: OpenClient, ledger: Ledger
) -> None:
    async with open_client(ledger=ledger) as client, respx.mock() as mock:
        route = mock.post(PYRAG_SEARCH_URL).respond(200, json=pyrag_body(HITS))
        first = await client.post(LOOKUP, json=lookup())
        again = await client.post(LOOKUP, json=lookup())
        served = await client.get(f"/ledger/{RUN}/{CALL}")

    assert route.call_count == 1
    assert first.status_code == again.status_code == 200
    assert again.content == first.content
    assert again.headers.get("X-Ledger-Replayed") == "true"
    assert served.status_code == 200
    assert served.headers["content-type"] == "application/json"
    entry = served.json()
    assert entry["status"] == "READY"
    assert entry["result_sha256"] == sha256_hex(first.content)
    assert entry["query_sha256"] == sha256_hex(QUERY)
    assert b',"result":' + first.content + b',"result_sha256":' in served.content


async def test_a_served_entry_is_enough_for_evidence_guard_to_verify_a_citation(
    open_client: OpenClient, ledger: Ledger
) -> None:
    async with open_client(ledger=ledger) as client, respx.mock() as mock:
        mock.post(PYRAG_SEARCH_URL).respond(200, json=pyrag_body(HITS))
        body = (await client.post(LOOKUP, json=lookup())).json()
        served = await client.get(f"/ledger/{RUN}/{CALL}")

    cited = body["evidence"][1]["document_id"]
    assert (
        verify_citation(
            served.content,
            run_id=RUN,
            kind=CitationKind.NORMAL,
            document_id=cited,
            tool_call_id=CALL,
        )
        == []
    )
    wrong = verify_citation(
        served.content, run_id="run-7", kind=CitationKind.NORMAL, document_id=cited
    )
    assert [v.code for v in wrong] == ["RUN_MISMATCH"]


async def test_a_no_evidence_entry_supports_a_negative_observation(
    open_client: OpenClient, ledger: Ledger
) -> None:
    async with open_client(ledger=ledger) as client, respx.mock() as mock:
        mock.post(PYRAG_SEARCH_URL).respond(200, json=pyrag_body([]))
        await client.post(LOOKUP, json=lookup())
        served = await client.get(f"/ledger/{RUN}/{CALL}")

    assert served.json()["evidence_status"] == "NO_EVIDENCE"
    assert verify_citation(served.content, run_id=RUN, kind=CitationKind.NEGATIVE_OBSERVATION) == []


async def test_ready_ids_reused_with_another_query_are_a_conflict(
    open_client: OpenClient, ledger: Ledger
) -> None:
    async with open_client(ledger=ledger) as client, respx.mock() as mock:
        route = mock.post(PYRAG_SEARCH_URL).respond(200, json=pyrag_body(HITS))
        first = await client.post(LOOKUP, json=lookup())
        other = await client.post(LOOKUP, json=lookup("another query"))
        served = await client.get(f"/ledger/{RUN}/{CALL}")

    assert route.call_count == 1
    assert_error(other, 409, "CONFLICT")
    assert sha256_hex(first.content) == served.json()["result_sha256"]


async def test_a_call_in_flight_is_a_conflict(open_client: OpenClient, ledger: Ledger) -> None:
    await ledger.claim(RUN, CALL, query_sha256=sha256_hex(QUERY), token="someone-else")

    async with open_client(ledger=ledger) as client, respx.mock(assert_all_called=False) as mock:
        route = mock.post(PYRAG_SEARCH_URL).respond(200, json=pyrag_body(HITS))
        response = await client.post(LOOKUP, json=lookup())

    assert_error(response, 409, "CONFLICT")
    assert route.call_count == 0


async def test_a_failed_call_is_ledgered_as_failed_and_runs_again(
    open_client: OpenClient, ledger: Ledger
) -> None:
    async with open_client(ledger=ledger) as client, respx.mock() as mock:
        route = mock.post(PYRAG_SEARCH_URL)
        route.side_effect = [httpx.Response(500), httpx.Response(200, json=pyrag_body(HITS))]
        failed = await client.post(LOOKUP, json=lookup())
        after_failure = (await client.get(f"/ledger/{RUN}/{CALL}")).json()
        second = await client.post(LOOKUP, json=lookup())
        after_success = (await client.get(f"/ledger/{RUN}/{CALL}")).json()

    assert_error(failed, 502, "UPSTREAM_ERROR")
    assert (after_failure["status"], after_failure["error"]) == ("FAILED", "UPSTREAM_ERROR")
    assert after_failure["result"] is None
    assert second.status_code == 200
    assert route.call_count == 2
    assert after_success["status"] == "READY" and after_success["error"] is None
    assert after_success["result_sha256"] == sha256_hex(second.content)


# -- fail closed -------------------------------------------------------------------------


async def test_an_unreachable_redis_fails_the_lookup_closed_with_503(
    open_client: OpenClient,
) -> None:
    unreachable = RedisLedger.from_url(CLOSED_PORT_URL, ttl_s=3600, pending_ttl_s=30)
    try:
        async with (
            open_client(ledger=unreachable) as client,
            respx.mock(assert_all_called=False) as mock,
        ):
            route = mock.post(PYRAG_SEARCH_URL).respond(200, json=pyrag_body(HITS))
            response = await client.post(LOOKUP, json=lookup())
            read = await client.get(f"/ledger/{RUN}/{CALL}")
            listing = await client.get(f"/ledger/{RUN}")
    finally:
        await unreachable.aclose()

    assert_error(response, 503, "LEDGER_UNAVAILABLE")
    assert "evidence" not in response.json()
    assert route.call_count == 0
    assert_error(read, 503, "LEDGER_UNAVAILABLE")
    assert_error(listing, 503, "LEDGER_UNAVAILABLE")


async def test_a_ledger_lost_before_ready_hands_out_no_evidence(
    open_client: OpenClient, ledger: Ledger
) -> None:
    broken = LedgerThatCannotComplete(ledger, expected_claims=1)

    async with open_client(ledger=broken) as client, respx.mock() as mock:
        mock.post(PYRAG_SEARCH_URL).respond(200, json=pyrag_body(HITS))
        response = await client.post(LOOKUP, json=lookup())

    assert_error(response, 503, "LEDGER_UNAVAILABLE")
    assert b"gw#chunk-1" not in response.content


class LedgerThatCannotCompleteOnce(CountingLedger):
    """The READY write fails once (the store blinked); everything else goes through."""

    def __init__(self, inner: Ledger) -> None:
        super().__init__(inner, expected_claims=1)
        self.failures_left = 1

    async def complete(self, *args: Any, **kwargs: Any) -> bool:
        if self.failures_left:
            self.failures_left -= 1
            raise LedgerUnavailable("ledger complete failed: TimeoutError")
        return await super().complete(*args, **kwargs)


async def test_a_failed_ready_write_releases_the_claim_so_the_same_ids_run_again_at_once(
    open_client: OpenClient, ledger: Ledger
) -> None:
    blinking = LedgerThatCannotCompleteOnce(ledger)

    async with open_client(ledger=blinking) as client, respx.mock() as mock:
        route = mock.post(PYRAG_SEARCH_URL).respond(200, json=pyrag_body(HITS))
        failed = await client.post(LOOKUP, json=lookup())
        released = await ledger.get(RUN, CALL)
        retried = await client.post(LOOKUP, json=lookup())

    assert_error(failed, 503, "LEDGER_UNAVAILABLE")
    assert released is not None
    assert (released.status.value, released.error) == ("FAILED", "LEDGER_UNAVAILABLE")
    assert retried.status_code == 200 and route.call_count == 2


async def test_a_lookup_cancelled_while_py_rag_works_releases_its_claim(
    open_client: OpenClient, ledger: Ledger
) -> None:
    asked = asyncio.Event()

    async def never_answers(_: httpx.Request) -> httpx.Response:
        asked.set()
        await asyncio.sleep(3600)
        raise AssertionError("unreachable")

    async with open_client(ledger=ledger) as client, respx.mock(assert_all_called=False) as mock:
        mock.post(PYRAG_SEARCH_URL).mock(side_effect=never_answers)
        call = asyncio.ensure_future(client.post(LOOKUP, json=lookup()))
        await asyncio.wait_for(asked.wait(), timeout=5)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        released = await ledger.get(RUN, CALL)

    assert released is not None and released.status.value == "FAILED"


# -- the read routes ---------------------------------------------------------------------


async def test_an_unknown_entry_and_another_runs_entry_are_not_found(
    open_client: OpenClient, ledger: Ledger
) -> None:
    async with open_client(ledger=ledger) as client, respx.mock() as mock:
        mock.post(PYRAG_SEARCH_URL).respond(200, json=pyrag_body(HITS))
        await client.post(LOOKUP, json=lookup())
        unknown = await client.get(f"/ledger/{RUN}/call_unknown")
        other_run = await client.get(f"/ledger/run-other/{CALL}")

    assert_error(unknown, 404, "NOT_FOUND")
    assert_error(other_run, 404, "NOT_FOUND")


async def test_a_run_listing_holds_its_entries_without_results(
    open_client: OpenClient, ledger: Ledger
) -> None:
    async with open_client(ledger=ledger) as client, respx.mock() as mock:
        route = mock.post(PYRAG_SEARCH_URL)
        route.side_effect = [
            httpx.Response(200, json=pyrag_body(HITS)),
            httpx.Response(500),
            httpx.Response(200, json=pyrag_body([])),
        ]
        await client.post(LOOKUP, json=lookup(call="call_1"))
        await asyncio.sleep(0.003)
        await client.post(LOOKUP, json=lookup(call="call_2"))
        await client.post(LOOKUP, json=lookup(call="call_3", run="run-other"))
        listing = await client.get(f"/ledger/{RUN}")
        empty = await client.get("/ledger/run-nobody")

    assert listing.status_code == 200
    data = listing.json()
    assert data["run_id"] == RUN
    assert [(e["tool_call_id"], e["status"]) for e in data["entries"]] == [
        ("call_1", "READY"),
        ("call_2", "FAILED"),
    ]
    assert all("result" not in e for e in data["entries"])
    assert data["entries"][0]["result_sha256"] is not None
    assert data["next_cursor"] is None
    assert empty.status_code == 200
    assert empty.json() == {"run_id": "run-nobody", "entries": [], "next_cursor": None}


async def test_the_run_listing_is_paged_and_carries_results_only_when_asked(
    open_client: OpenClient, ledger: Ledger
) -> None:
    async with open_client(ledger=ledger) as client, respx.mock() as mock:
        mock.post(PYRAG_SEARCH_URL).respond(200, json=pyrag_body(HITS))
        answers = []
        for i in range(3):
            answers.append(await client.post(LOOKUP, json=lookup(call=f"call_{i}")))
            await asyncio.sleep(0.003)
        first = await client.get(f"/ledger/{RUN}", params={"limit": 2})
        cursor = first.json()["next_cursor"]
        rest = await client.get(
            f"/ledger/{RUN}", params={"limit": 2, "cursor": cursor, "include": "result"}
        )

    assert [e["tool_call_id"] for e in first.json()["entries"]] == ["call_0", "call_1"]
    assert all("result" not in e for e in first.json()["entries"])
    assert cursor == "call_1"
    (last,) = rest.json()["entries"]
    assert last["tool_call_id"] == "call_2" and rest.json()["next_cursor"] is None
    assert b',"result":' + answers[2].content + b',"result_sha256":' in rest.content


async def test_the_run_listing_gives_fifty_entries_by_default(
    open_client: OpenClient, ledger: Ledger
) -> None:
    for i in range(51):
        await ledger.claim(RUN, f"call_{i:02}", query_sha256=sha256_hex(QUERY), token="t")
    async with open_client(ledger=ledger) as client:
        page = (await client.get(f"/ledger/{RUN}")).json()

    assert len(page["entries"]) == 50 and page["next_cursor"] == page["entries"][-1]["tool_call_id"]


@pytest.mark.parametrize(
    ("params", "status", "code"),
    [
        ({"limit": 0}, 422, "INVALID_REQUEST"),
        ({"limit": 101}, 422, "INVALID_REQUEST"),
        ({"include": "body"}, 422, "INVALID_REQUEST"),
        ({"cursor": "call x"}, 422, "INVALID_REQUEST"),
        ({"cursor": "call_nobody"}, 404, "NOT_FOUND"),
    ],
    ids=["limit 0", "limit over 100", "unknown include", "cursor outside the charset", "stale"],
)
async def test_bad_listing_parameters_are_refused(
    open_client: OpenClient, ledger: Ledger, params: dict[str, Any], status: int, code: str
) -> None:
    await ledger.claim(RUN, CALL, query_sha256=sha256_hex(QUERY), token="t")
    async with open_client(ledger=ledger) as client:
        response = await client.get(f"/ledger/{RUN}", params=params)

    assert_error(response, status, code)


@pytest.mark.parametrize(
    "path",
    [
        "/ledger/run%2042/call_x1",
        "/ledger/run-42/call%3Ax1",
        f"/ledger/{'r' * 129}/call_x1",
        "/ledger/r%7Bx%7D",
    ],
    ids=["space in run id", "colon in call id", "run id too long", "braces in run id"],
)
async def test_ids_outside_the_id_charset_are_invalid_requests(
    open_client: OpenClient, ledger: Ledger, path: str
) -> None:
    async with open_client(ledger=ledger) as client:
        response = await client.get(path)

    assert_error(response, 422, "INVALID_REQUEST")
    (problem,) = json.loads(response.content)["error"]["details"]
    assert problem["loc"][0] == "path" and problem["loc"][1] in {"run_id", "tool_call_id"}
