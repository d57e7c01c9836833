"""POST /guard/verify (docs/guard.md) over real lookups: each forged citation is caught with its
own code, a genuine report passes, the route's bounds, errors and outcome hand-over.

Parametrized over the in-process ledger and a private redis-server; py-rag is mocked by respx.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis

from guard_support import Guard, Store, cite, excerpt, memory_store, open_guard, redis_store, report
from lookup_knowledge.adapters.ledger_redis import RedisLedger

A, B = "run-a", "run-b"
CLOSED_PORT_URL = "redis://127.0.0.1:1/11"


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.redis)])
async def store(request: pytest.FixtureRequest) -> AsyncIterator[Store]:
    if request.param == "memory":
        yield memory_store()
        return
    url = request.getfixturevalue("redis_url")
    admin = aioredis.Redis.from_url(url)
    await admin.flushdb()
    redis = redis_store(url, admin)
    yield redis
    await redis.ledger.aclose()
    await admin.flushdb()
    await admin.aclose()


@pytest.fixture
async def guard(tmp_path: Path, store: Store) -> AsyncIterator[Guard]:
    async with open_guard(tmp_path, store.ledger) as opened:
        for run, call, keys in [
            (A, "call_1", ["gw#chunk-1", "nginx#chunk-2"]),
            (A, "call_2", []),  # NO_EVIDENCE
            (B, "call_b1", ["dns#chunk-1"]),
        ]:
            assert (await opened.lookup(run, call, keys)).status_code == 200
        failed = await opened.lookup(A, "call_3", ["gw#chunk-1"], pyrag_status=500)
        assert failed.status_code == 502  # the ledger holds the call as FAILED
        yield opened


def codes(answer: dict[str, Any]) -> list[tuple[str, str]]:
    return [(v["code"], v["path"]) for v in answer["violations"]]


async def test_a_genuine_report_passes_with_the_ledgered_evidence_as_its_snapshot(
    guard: Guard,
) -> None:
    shown = (await guard.lookup(A, "call_4", ["k8s#chunk-0"])).json()["evidence"][0]
    data = report(
        cite("call_1", "nginx#chunk-2", quote="Excerpt of\n nginx#chunk-2"),
        cite("call_2"),
        cite("call_4", "k8s#chunk-0"),
    )

    response = await guard.verify(A, data)

    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    answer = response.json()
    assert answer["ok"] is True and answer["violations"] == []
    assert answer["evidence_snapshot"] == [
        {"tool_call_id": "call_1", "document_id": "nginx#chunk-2", "source": "runbooks/nginx.md",
         "title": "Nginx", "breadcrumb": "Nginx > Steps", "excerpt": excerpt("nginx#chunk-2")},
        {"tool_call_id": "call_4", **shown},
    ]  # fmt: skip


# -- each forged citation, its own code ----------------------------------------------------


async def test_a_call_of_another_run_is_not_found_in_this_run(guard: Guard) -> None:
    answer = (await guard.verify(A, report(cite("call_b1", "dns#chunk-1")))).json()

    assert codes(answer) == [("NOT_FOUND", "$.analyses[0].citations[0].tool_call_id")]
    assert answer["ok"] is False and answer["evidence_snapshot"] == []


async def test_an_entry_moved_in_from_another_run_is_a_run_mismatch(
    guard: Guard, store: Store
) -> None:
    await store.move(B, A, "call_b1")

    answer = (await guard.verify(A, report(cite("call_b1", "dns#chunk-1")))).json()

    assert codes(answer) == [("RUN_MISMATCH", "$.analyses[0].citations[0].tool_call_id")]
    assert answer["evidence_snapshot"] == []


async def test_a_failed_call_is_not_ready(guard: Guard) -> None:
    answer = (await guard.verify(A, report(cite("call_3", "gw#chunk-1")))).json()

    assert codes(answer) == [("NOT_READY", "$.analyses[0].citations[0].tool_call_id")]


async def test_a_document_the_agent_was_not_shown_is_refused(guard: Guard) -> None:
    answer = (await guard.verify(A, report(cite("call_1", "dns#chunk-1")))).json()

    assert codes(answer) == [("DOCUMENT_NOT_IN_RESULT", "$.analyses[0].citations[0].document_id")]


async def test_a_negative_observation_cited_as_normal_is_a_kind_mismatch(guard: Guard) -> None:
    answer = (await guard.verify(A, report(cite("call_2", "gw#chunk-1")))).json()

    assert codes(answer) == [("KIND_MISMATCH", "$.analyses[0].citations[0].kind")]


async def test_a_modified_ledger_entry_is_a_sha_mismatch(guard: Guard, store: Store) -> None:
    await store.tamper(A, "call_1", lambda body: body.replace(b"Excerpt of", b"Excerpt on"))

    answer = (await guard.verify(A, report(cite("call_1", "gw#chunk-1")))).json()

    assert codes(answer) == [("SHA_MISMATCH", "$.analyses[0].citations[0].tool_call_id")]
    assert answer["evidence_snapshot"] == []


async def test_a_quote_that_is_not_in_the_excerpt_is_refused(guard: Guard) -> None:
    data = report(cite("call_1", "gw#chunk-1", quote="Excerpt of nginx#chunk-2"))

    answer = (await guard.verify(A, data)).json()

    assert codes(answer) == [("QUOTE_NOT_IN_EXCERPT", "$.analyses[0].citations[0].quote")]


async def test_every_violation_of_a_report_comes_back_in_one_answer(guard: Guard) -> None:
    data = report(cite("call_2", "gw#chunk-1"), cite("call_3", "gw#chunk-1"), cite("call_b1"))
    data["limitations"] = []

    answer = (await guard.verify(A, data)).json()

    assert [code for code, _ in codes(answer)] == [
        "LIMITATIONS_MISSING",
        "KIND_MISMATCH",
        "NOT_READY",
        "NOT_FOUND",
    ]


# -- outcomes ------------------------------------------------------------------------------


async def test_every_verification_hands_its_outcome_to_the_port(guard: Guard) -> None:
    await guard.verify(A, report(cite("call_1", "gw#chunk-1")))
    await guard.verify(A, report(cite("call_1", "gw#chunk-9"), cite("call_1", "gw#chunk-1")))

    ok, refused = guard.outcomes.outcomes
    assert (ok.run_id, ok.outcome, ok.violations, ok.snapshot_count) == (A, "ok", (), 1)
    assert refused.outcome == "violations"
    assert [(v.code, v.path) for v in refused.violations] == [
        ("DOCUMENT_NOT_IN_RESULT", "$.analyses[0].citations[0].document_id")
    ]
    assert (refused.analysis_count, refused.citation_count, refused.tool_call_count) == (2, 2, 1)
    assert refused.ledger_entry_count == 1
    assert len(refused.report_sha256) == 64 and refused.report_sha256 != ok.report_sha256
    assert refused.duration_ms >= 0


async def test_outcomes_are_counted_in_metrics(tmp_path: Path) -> None:
    store = memory_store()
    async with open_guard(tmp_path, store.ledger, record=False) as guard:
        await guard.lookup(A, "call_1", ["gw#chunk-1"])
        await guard.verify(A, report(cite("call_1", "gw#chunk-1")))
        await guard.verify(A, report(cite("call_1", "gw#chunk-9"), cite("call_9", "x")))
        metrics = (await guard.client.get("/metrics")).text

    assert 'lk_guard_verifications_total{outcome="ok"} 1.0' in metrics
    assert 'lk_guard_verifications_total{outcome="violations"} 1.0' in metrics
    assert 'lk_guard_violations_total{code="DOCUMENT_NOT_IN_RESULT"} 1.0' in metrics
    assert 'lk_guard_violations_total{code="NOT_FOUND"} 1.0' in metrics
    assert "lk_guard_duration_seconds_count 2.0" in metrics


async def test_an_unreadable_ledger_answers_503_and_judges_nothing(tmp_path: Path) -> None:
    unreachable = RedisLedger.from_url(CLOSED_PORT_URL, ttl_s=3600, pending_ttl_s=30)
    try:
        async with open_guard(tmp_path, unreachable) as guard:
            response = await guard.verify(A, report(cite("call_1", "gw#chunk-1")))
    finally:
        await unreachable.aclose()

    assert response.status_code == 503
    assert response.json()["error"]["code"] == "LEDGER_UNAVAILABLE"
    (outcome,) = guard.outcomes.outcomes
    assert outcome.outcome == "LEDGER_UNAVAILABLE" and outcome.violations == ()


# -- bounds and shape ----------------------------------------------------------------------


async def test_a_body_over_64_kib_is_refused_before_it_is_read(guard: Guard) -> None:
    data = report(cite("call_1", "gw#chunk-1"))
    data["limitations"] = ["x" * 3000] * 22  # also over the count bound: the size answers first

    response = await guard.verify(A, data)

    assert response.status_code == 413
    assert response.json()["error"]["code"] == "PAYLOAD_TOO_LARGE"


@pytest.mark.parametrize(
    "body",
    [
        {"report": report(cite("call_1", "gw#chunk-1"))},
        {"run_id": "run a", "report": report(cite("call_1", "gw#chunk-1"))},
        {"run_id": A, "report": {"analyses": []}},
        {"run_id": A, "report": {**report(cite("call_1", "x")), "verdict": "true"}},
        {"run_id": A, "report": report(*[cite(f"call_{i}", "x") for i in range(51)])},
    ],
    ids=["no run id", "bad run id", "no limitations", "unknown key", "over the call bound"],
)
async def test_a_body_that_is_not_a_report_is_an_invalid_request(
    guard: Guard, body: dict[str, object]
) -> None:
    response = await guard.client.post("/guard/verify", json=body)

    assert response.status_code == 422, response.text
    assert response.json()["error"]["code"] == "INVALID_REQUEST"
    # Nothing was judged, but the refusal is an outcome: it is counted and audited.
    [outcome] = guard.outcomes.outcomes
    assert (outcome.outcome, outcome.violations) == ("INVALID_REQUEST", ())
    assert outcome.run_id == body.get("run_id", "")


async def test_a_body_that_is_not_json_is_a_bad_request(guard: Guard) -> None:
    response = await guard.client.post(
        "/guard/verify", content=b"{not json", headers={"content-type": "application/json"}
    )

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "INVALID_REQUEST"


async def test_the_run_id_may_be_sent_in_camel_case(guard: Guard) -> None:
    body = {"runId": A, "report": report(cite("call_1", "gw#chunk-1"))}

    response = await guard.client.post("/guard/verify", json=body)

    assert response.status_code == 200 and response.json()["ok"] is True
