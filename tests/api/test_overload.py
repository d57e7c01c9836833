"""Overload and recovery through the HTTP API (docs/http-api.md#overload).

py-rag here is a real local server (tests/pyrag_server.py), so the service's real connection
pool is exercised: respx would bypass it.
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import respx

from builders import pyrag_body, raw_hit
from lookup_knowledge.app import create_app
from pyrag_server import pyrag_server
from support import PYRAG_SEARCH_URL, OpenClient, RecordingAudit, make_settings

LOOKUP = "/lookup_knowledge"


def body(call: str, run: str = "run-burst") -> dict[str, Any]:
    return {"run_id": run, "tool_call_id": call, "query": "网关超时怎么排查"}


async def test_lookups_succeed_at_once_after_bursts_of_py_rag_timeouts(
    open_client: OpenClient,
) -> None:
    async with (
        pyrag_server(delay_s=0.5) as pyrag,
        open_client(
            audit=RecordingAudit(),
            pyrag_base_url=pyrag.url,
            pyrag_timeout_s=0.2,
            max_concurrent_lookups=1000,
        ) as client,
    ):
        statuses: set[int] = set()
        # Enough timed-out calls to orphan every slot of the old 100-connection pool.
        for burst, size in enumerate((200, 200, 200, 200)):
            answers = await asyncio.gather(
                *(client.post(LOOKUP, json=body(f"b{burst}-{i}")) for i in range(size))
            )
            statuses |= {r.status_code for r in answers}
        pyrag.delay_s = 0.0
        after = [await client.post(LOOKUP, json=body(f"a{i}")) for i in range(5)]

    assert statuses <= {503, 504}
    assert [r.status_code for r in after] == [200] * 5, [r.text for r in after]


async def wait_until(condition: Callable[[], bool]) -> None:
    for _ in range(1000):
        if condition():
            return
        await asyncio.sleep(0.005)
    raise AssertionError("the condition never held")


class HeldPyrag:
    """A py-rag that answers only once `release` is set; `asked` tells a request arrived."""

    def __init__(self) -> None:
        self.asked, self.release = asyncio.Event(), asyncio.Event()

    async def __call__(self, _: httpx.Request) -> httpx.Response:
        self.asked.set()
        await self.release.wait()
        return httpx.Response(200, json=pyrag_body([raw_hit("gw#chunk-1", 0.9)]))


async def test_lookups_beyond_the_limit_are_refused_before_the_ledger_and_retry_at_once(
    open_client: OpenClient, audit: RecordingAudit
) -> None:
    pyrag = HeldPyrag()

    async with (
        open_client(audit=audit, max_concurrent_lookups=2, lookup_queue_max=0) as client,
        respx.mock() as mock,
    ):
        mock.post(PYRAG_SEARCH_URL).mock(side_effect=pyrag)
        calls = [asyncio.ensure_future(client.post(LOOKUP, json=body(f"c{i}"))) for i in range(5)]
        await wait_until(lambda: sum(call.done() for call in calls) == 3)
        pyrag.release.set()
        answers = [await call for call in calls]
        refused = [i for i, a in enumerate(answers) if a.status_code == 503]
        entries = [await client.get(f"/ledger/run-burst/c{i}") for i in refused]
        retried = [await client.post(LOOKUP, json=body(f"c{i}")) for i in refused]
        metrics = (await client.get("/metrics")).text

    assert sorted(a.status_code for a in answers) == [200, 200, 503, 503, 503]
    for i in refused:
        error = answers[i].json()["error"]
        assert error["code"] == "OVERLOADED" and error["details"]["reason"] == "queue_full"
        assert answers[i].headers["retry-after"] == "1"
    assert [e.status_code for e in entries] == [404, 404, 404]  # nothing was claimed
    assert [r.status_code for r in retried] == [200, 200, 200]
    # Every call leaves its row: the 3 shed ones too, then their 3 retries and the 2 admitted.
    shed = [r for r in audit.records if not r.success]
    assert sorted(r.tool_call_id for r in shed) == sorted(f"c{i}" for i in refused)
    assert {(r.error_code, r.run_id, r.query) for r in shed} == {
        ("OVERLOADED", "run-burst", "网关超时怎么排查")
    }
    assert all("limit of 2 lookups" in r.retrieval_details["error"] for r in shed)
    assert len([r for r in audit.records if r.success]) == 5
    assert 'lk_lookups_refused_total{reason="queue_full"} 3.0' in metrics


async def test_a_shed_call_without_a_valid_token_leaves_no_row(
    open_client: OpenClient, audit: RecordingAudit
) -> None:
    pyrag = HeldPyrag()

    token = "agent-secret-1"
    good = {"Authorization": f"Bearer {token}"}
    async with (
        open_client(
            audit=audit, max_concurrent_lookups=1, lookup_queue_max=0, lookup_api_tokens=token
        ) as client,
        respx.mock() as mock,
    ):
        mock.post(PYRAG_SEARCH_URL).mock(side_effect=pyrag)
        held = asyncio.ensure_future(client.post(LOOKUP, json=body("held"), headers=good))
        await asyncio.wait_for(pyrag.asked.wait(), 10)
        anonymous = await client.post(LOOKUP, json=body("anon"))
        wrong = await client.post(LOOKUP, json=body("wrong"), headers={"Authorization": "Bearer x"})
        not_json = await client.post(LOOKUP, content=b"{", headers=good)
        shed = await client.post(LOOKUP, json=body("shed"), headers=good)
        pyrag.release.set()
        assert (await held).status_code == 200

    assert [r.status_code for r in (anonymous, wrong, not_json, shed)] == [503] * 4
    assert [(r.tool_call_id, r.error_code) for r in audit.records if not r.success] == [
        ("shed", "OVERLOADED")
    ]


async def test_a_shed_call_is_let_in_by_the_same_token_rules_as_the_route(
    open_client: OpenClient, audit: RecordingAudit
) -> None:
    pyrag = HeldPyrag()

    tokens = {"lookup_api_tokens": "agent-1,agent-2", "ledger_api_tokens": "guard-1"}
    presented = {
        "scheme-any-case": "bEARER agent-2",  # the route accepts: a row
        "sp-htab-around": " Bearer  agent-1 \t",  # likewise
        "nbsp-after": "Bearer agent-1\xa0",  # RFC 6750: not the token, 401 at the route
        "ledger-role": "Bearer guard-1",  # 403 at the route
        "prefix-only": "Bearer agent-",  # 401
    }
    async with (
        open_client(audit=audit, max_concurrent_lookups=1, lookup_queue_max=0, **tokens) as client,
        respx.mock() as mock,
    ):
        mock.post(PYRAG_SEARCH_URL).mock(side_effect=pyrag)
        held = asyncio.ensure_future(
            client.post(LOOKUP, json=body("held"), headers={"Authorization": "Bearer agent-1"})
        )
        await asyncio.wait_for(pyrag.asked.wait(), 10)
        answers = [
            await client.post(
                LOOKUP, json=body(call), headers={"Authorization": value.encode("latin-1")}
            )
            for call, value in presented.items()
        ]
        pyrag.release.set()
        assert (await held).status_code == 200

    assert [a.status_code for a in answers] == [503] * len(presented)
    assert sorted(r.tool_call_id for r in audit.records if not r.success) == [
        "scheme-any-case",
        "sp-htab-around",
    ]


async def test_shed_answers_are_the_error_envelope_each_with_its_own_request_id(
    open_client: OpenClient,
) -> None:
    pyrag = HeldPyrag()

    async with (
        open_client(
            max_concurrent_lookups=1, lookup_queue_max=1, lookup_queue_timeout_s=0.05
        ) as client,
        respx.mock() as mock,
    ):
        mock.post(PYRAG_SEARCH_URL).mock(side_effect=pyrag)
        held = asyncio.ensure_future(client.post(LOOKUP, json=body("held")))
        await asyncio.wait_for(pyrag.asked.wait(), 10)
        queued = asyncio.ensure_future(client.post(LOOKUP, json=body("queued")))
        await asyncio.sleep(0)  # let it take the one place in the queue
        full = [await client.post(LOOKUP, json=body(f"full{i}")) for i in range(3)]
        timed_out = await queued
        pyrag.release.set()
        assert (await held).status_code == 200

    reasons = {
        "queue_full": "1 more are waiting",
        "wait_timeout": "none came free within 0.05 s",
    }
    for answer, reason in [*((a, "queue_full") for a in full), (timed_out, "wait_timeout")]:
        assert answer.status_code == 503
        assert answer.headers["content-type"] == "application/json"
        assert answer.headers["retry-after"] == "1"
        assert int(answer.headers["content-length"]) == len(answer.content)
        assert answer.json() == {
            "error": {
                "code": "OVERLOADED",
                "message": "this service is running its limit of 1 lookups and "
                f"{reasons[reason]}; retry after 1 s",
                "details": {"limit": 1, "reason": reason},
            }
        }
    # The prebuilt answer is never shared: each carries one X-Request-ID, its own.
    ids = [a.headers.get_list("x-request-id") for a in [*full, timed_out]]
    assert all(len(found) == 1 for found in ids)
    assert len({found[0] for found in ids}) == len(ids)


async def test_a_lookup_waits_in_the_queue_for_a_free_slot(open_client: OpenClient) -> None:
    async with (
        open_client(
            audit=RecordingAudit(),
            max_concurrent_lookups=1,
            lookup_queue_max=10,
            lookup_queue_timeout_s=30,
        ) as client,
        respx.mock() as mock,
    ):
        mock.post(PYRAG_SEARCH_URL).respond(200, json=pyrag_body([raw_hit("gw#chunk-1", 0.9)]))
        answers = await asyncio.gather(*(client.post(LOOKUP, json=body(f"q{i}")) for i in range(6)))
    assert [a.status_code for a in answers] == [200] * 6


async def test_mcp_calls_share_the_lookup_limit(open_client: OpenClient) -> None:
    pyrag = HeldPyrag()

    async with (
        open_client(audit=RecordingAudit(), max_concurrent_lookups=1, lookup_queue_max=0) as client,
        respx.mock() as mock,
    ):
        mock.post(PYRAG_SEARCH_URL).mock(side_effect=pyrag)
        holder = asyncio.ensure_future(client.post(LOOKUP, json=body("held")))
        await asyncio.wait_for(pyrag.asked.wait(), timeout=5)
        refused = await client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        pyrag.release.set()
        held = await holder

    assert held.status_code == 200
    assert refused.status_code == 503 and refused.json()["error"]["code"] == "OVERLOADED"


async def test_the_served_app_freezes_what_start_up_built_and_a_plain_app_does_not(
    tmp_path: Path,
) -> None:
    """The heap built at start-up leaves the cyclic collector's sight once the service is
    started (docs/performance.md#overload); apps made by tests and embedders keep it."""
    gc.unfreeze()
    plain = create_app(make_settings(tmp_path))
    async with plain.router.lifespan_context(plain):
        assert gc.get_freeze_count() == 0
    served = create_app(make_settings(tmp_path), freeze_heap=True)
    try:
        assert gc.get_freeze_count() == 0
        async with served.router.lifespan_context(served):
            frozen = gc.get_freeze_count()
        assert frozen > 10_000  # the modules, the app, its clients
    finally:
        gc.unfreeze()
