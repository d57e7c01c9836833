"""The ledger's batch read (docs/ledger.md#batch-read): many entries of one run in one round trip.

Over the in-process ledger, a private redis-server and a private three-node Redis Cluster.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import redis.asyncio as aioredis

from lookup_knowledge.adapters.ledger_memory import MemoryLedger
from lookup_knowledge.adapters.ledger_redis import RedisLedger, entry_key
from lookup_knowledge.domain.errors import LedgerUnavailable
from lookup_knowledge.domain.ledger import LedgerStatus, sha256_hex
from redis_counting import count_round_trips

RUN = "run-42"
QUERY_SHA = sha256_hex("q")
CLOSED_PORT_URL = "redis://127.0.0.1:1/11"

Ledger = MemoryLedger | RedisLedger


def body(call: str) -> bytes:
    return (
        f'{{"evidence_status":"EVIDENCE_FOUND","tool_call_id":"{call}","query":"q",'
        f'"evidence":[{{"document_id":"d#chunk-1","excerpt":"x"}}],'
        f'"returned_count":1,"truncated":false}}'
    ).encode()


async def flushed(url: str, *, cluster: bool) -> aioredis.Redis | aioredis.RedisCluster:
    """An admin client onto an emptied server (the session's servers are shared by tests)."""
    admin: aioredis.Redis | aioredis.RedisCluster = (
        aioredis.RedisCluster.from_url(url) if cluster else aioredis.Redis.from_url(url)
    )
    await admin.flushall()
    return admin


@pytest.fixture(
    params=[
        "memory",
        pytest.param("redis", marks=pytest.mark.redis),
        pytest.param("redis-cluster", marks=pytest.mark.redis),
    ]
)
async def ledger(request: pytest.FixtureRequest) -> AsyncIterator[Ledger]:
    if request.param == "memory":
        yield MemoryLedger(ttl_s=3600, pending_ttl_s=30)
        return
    cluster = request.param == "redis-cluster"
    url = request.getfixturevalue("redis_cluster_url" if cluster else "redis_url")
    admin = await flushed(url, cluster=cluster)
    redis_ledger = RedisLedger.from_url(url, ttl_s=3600, pending_ttl_s=30, cluster=cluster)
    yield redis_ledger
    await redis_ledger.aclose()
    await admin.flushall()
    await admin.aclose()


async def ready(ledger: Ledger, call: str, *, run: str = RUN) -> None:
    assert await ledger.claim(run, call, query_sha256=QUERY_SHA, token=call) is None
    assert await ledger.complete(
        run,
        call,
        token=call,
        query_sha256=QUERY_SHA,
        body=body(call),
        evidence_status="EVIDENCE_FOUND",
    )


async def test_a_batch_read_answers_each_known_call_with_its_entry(ledger: Ledger) -> None:
    await ready(ledger, "call_1")
    await ready(ledger, "call_2")
    await ledger.claim(RUN, "call_3", query_sha256=QUERY_SHA, token="t3")
    await ledger.fail(RUN, "call_3", token="t3", query_sha256=QUERY_SHA, error_code="X")

    found = await ledger.get_many(RUN, ["call_2", "call_3", "call_1"])

    assert set(found) == {"call_1", "call_2", "call_3"}
    for call, entry in found.items():
        assert entry == await ledger.get(RUN, call)
    assert found["call_2"].body == body("call_2")
    assert found["call_3"].status is LedgerStatus.FAILED


async def test_unknown_calls_and_calls_of_another_run_are_absent(ledger: Ledger) -> None:
    await ready(ledger, "call_1")
    await ready(ledger, "call_other", run="run-other")

    found = await ledger.get_many(RUN, ["call_1", "call_unknown", "call_other"])

    assert list(found) == ["call_1"]


async def test_a_batch_read_of_nothing_is_empty(ledger: Ledger) -> None:
    assert await ledger.get_many(RUN, []) == {}


async def test_a_call_named_twice_is_read_once(ledger: Ledger) -> None:
    await ready(ledger, "call_1")

    found = await ledger.get_many(RUN, ["call_1", "call_1"])

    assert list(found) == ["call_1"]


@pytest.mark.redis
@pytest.mark.parametrize("cluster", [False, True], ids=["redis", "redis-cluster"])
async def test_ten_entries_are_read_in_one_redis_round_trip(
    request: pytest.FixtureRequest, cluster: bool
) -> None:
    url = request.getfixturevalue("redis_cluster_url" if cluster else "redis_url")
    admin = await flushed(url, cluster=cluster)
    ledger = RedisLedger.from_url(url, ttl_s=3600, pending_ttl_s=30, cluster=cluster)
    calls = [f"call_{i}" for i in range(10)]
    try:
        for call in calls:
            await ready(ledger, call)
        await ledger.get(RUN, calls[0])  # connections are open before counting

        with count_round_trips() as trips:
            found = await ledger.get_many(RUN, [*calls, "call_unknown"])

        assert set(found) == set(calls)
        assert trips.batches == [["HMGET"] * 11]
    finally:
        await ledger.aclose()
        await admin.flushall()
        await admin.aclose()


@pytest.mark.redis
async def test_a_foreign_value_in_a_batch_is_not_served_as_evidence(redis_url: str) -> None:
    admin = await flushed(redis_url, cluster=False)
    ledger = RedisLedger.from_url(redis_url, ttl_s=3600, pending_ttl_s=30)
    try:
        await ready(ledger, "call_1")
        await admin.hset(entry_key(RUN, "call_2"), mapping={"status": "DONE"})

        with pytest.raises(LedgerUnavailable):
            await ledger.get_many(RUN, ["call_1", "call_2"])
    finally:
        await admin.flushall()
        await admin.aclose()
        await ledger.aclose()


async def test_an_unreachable_redis_fails_a_batch_read_as_ledger_unavailable() -> None:
    ledger = RedisLedger.from_url(CLOSED_PORT_URL, ttl_s=3600, pending_ttl_s=30)
    try:
        with pytest.raises(LedgerUnavailable):
            await ledger.get_many(RUN, ["call_1"])
    finally:
        await ledger.aclose()
