"""The evidence ledger (docs/ledger.md): one behaviour suite over the in-process and Redis backend,
then what only Redis has (keys, TTLs in the server, an unreachable server).

Redis tests use a real redis-server private to the test session (the `redis_url` fixture),
flushed around each test.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis.asyncio as aioredis
import uvloop
from redis.asyncio.connection import Connection as RedisPyConnection
from redis.crc import key_slot

from lookup_knowledge.adapters.ledger_memory import MemoryLedger
from lookup_knowledge.adapters.ledger_redis import (
    CONNECT_TIMEOUT_S,
    SOCKET_TIMEOUT_S,
    RedisLedger,
    entry_key,
    run_index_key,
)
from lookup_knowledge.adapters.ledger_redis_lean import Endpoint, pack
from lookup_knowledge.domain.errors import LedgerUnavailable, NotFound, Overloaded
from lookup_knowledge.domain.ledger import LedgerEntry, LedgerStatus, sha256_hex
from redis_servers import redis_server

CLOSED_PORT_URL = "redis://127.0.0.1:1/11"
TTL_S = 3600
PENDING_TTL_S = 30

RUN = "run-42"
CALL = "call_x1"
QUERY_SHA = sha256_hex("网关超时怎么排查")
# Non-ASCII, unusual spacing and escapes: a replay must give back these exact bytes.
BODY = (
    '{"evidence_status":"EVIDENCE_FOUND","tool_call_id":"call_x1","query":"网关超时怎么排查",'
    '"evidence":[{"document_id":"gw#chunk-1","excerpt":"Check \\"upstream\\" first …"}],'
    '"returned_count":1,"relevance_level":"PRECISE","truncated":false}'
).encode()
OTHER_BODY = BODY.replace(b"first", b"later")

Ledger = MemoryLedger | RedisLedger


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Backend:
    name: str
    ledger: Ledger
    advance: Callable[[float], Awaitable[None]]  # let this much time pass for the TTLs
    new_ledger: Callable[[], Ledger]  # another client onto the same store (racing writers)


@pytest.fixture
async def redis_client(redis_url: str) -> AsyncIterator[aioredis.Redis]:
    client = aioredis.Redis.from_url(redis_url)
    await client.flushdb()
    yield client
    await client.flushdb()
    await client.aclose()


async def _age_redis_keys(client: aioredis.Redis | aioredis.RedisCluster, seconds: float) -> None:
    """Make Redis time pass: every key's TTL shrinks by `seconds`, lapsed keys go."""
    async for key in client.scan_iter(match="lk:*"):
        left = await client.pttl(key) - int(seconds * 1000)
        if left <= 0:
            await client.delete(key)
        else:
            await client.pexpire(key, left)


@pytest.fixture(
    params=[
        "memory",
        pytest.param("redis", marks=pytest.mark.redis),
        pytest.param("redis-cluster", marks=pytest.mark.redis),
    ]
)
async def backend(request: pytest.FixtureRequest) -> AsyncIterator[Backend]:
    if request.param == "memory":
        clock = FakeClock()
        memory = MemoryLedger(ttl_s=TTL_S, pending_ttl_s=PENDING_TTL_S, clock=clock)

        async def tick(seconds: float) -> None:
            clock.now += seconds

        yield Backend("memory", memory, tick, lambda: memory)
        return

    cluster = request.param == "redis-cluster"
    url = request.getfixturevalue("redis_cluster_url" if cluster else "redis_url")
    client: aioredis.Redis | aioredis.RedisCluster
    if cluster:
        client = aioredis.RedisCluster.from_url(url)
        await client.flushall()
    else:
        client = aioredis.Redis.from_url(url)
        await client.flushdb()
    opened: list[RedisLedger] = []

    def new_ledger() -> RedisLedger:
        ledger = RedisLedger.from_url(
            url, ttl_s=TTL_S, pending_ttl_s=PENDING_TTL_S, cluster=cluster
        )
        opened.append(ledger)
        return ledger

    async def age(seconds: float) -> None:
        await _age_redis_keys(client, seconds)

    yield Backend(request.param, new_ledger(), age, new_ledger)
    for ledger in opened:
        await ledger.aclose()
    if cluster:
        await client.flushall()
    else:
        await client.flushdb()
    await client.aclose()


async def _claim(ledger: Ledger, token: str = "t1", *, call: str = CALL) -> LedgerEntry | None:
    return await ledger.claim(RUN, call, query_sha256=QUERY_SHA, token=token)


async def _complete(
    ledger: Ledger, token: str = "t1", body: bytes = BODY, *, call: str = CALL
) -> bool:
    return await ledger.complete(
        RUN,
        call,
        token=token,
        query_sha256=QUERY_SHA,
        body=body,
        evidence_status="EVIDENCE_FOUND",
    )


async def _fail(ledger: Ledger, token: str = "t1", code: str = "UPSTREAM_ERROR") -> bool:
    return await ledger.fail(RUN, CALL, token=token, query_sha256=QUERY_SHA, error_code=code)


async def _listed(ledger: Ledger, run_id: str = RUN) -> list[LedgerEntry]:
    """Every entry of the run, page after page (pages of 2, so paging is exercised)."""
    entries: list[LedgerEntry] = []
    cursor = None
    while True:
        page = await ledger.list_run(run_id, after=cursor, limit=2, with_bodies=False)
        entries.extend(page.entries)
        if page.next_cursor is None:
            return entries
        cursor = page.next_cursor


async def _ready(ledger: Ledger, token: str = "t1", *, call: str = CALL) -> None:
    assert await _claim(ledger, token, call=call) is None
    assert await _complete(ledger, token, call=call)


# -- lifecycle ---------------------------------------------------------------------------


async def test_the_first_claim_wins_and_leaves_a_pending_entry(backend: Backend) -> None:
    assert await _claim(backend.ledger) is None

    entry = await backend.ledger.get(RUN, CALL)
    assert entry is not None
    assert entry.status is LedgerStatus.PENDING
    assert (entry.run_id, entry.tool_call_id, entry.tool_name) == (RUN, CALL, "lookup_knowledge")
    assert entry.query_sha256 == QUERY_SHA
    assert entry.body is None and entry.result_sha256 is None and entry.error is None
    assert entry.created_at.endswith("Z")


async def test_a_second_claim_gets_the_pending_entry_that_blocks_it(backend: Backend) -> None:
    await _claim(backend.ledger, "t1")

    blocking = await _claim(backend.ledger, "t2")

    assert blocking is not None
    assert blocking.status is LedgerStatus.PENDING


async def test_a_retried_claim_by_the_holder_still_holds_the_claim(backend: Backend) -> None:
    await _claim(backend.ledger, "t1")

    assert await _claim(backend.ledger, "t1") is None


async def test_completing_a_claim_stores_ready_with_the_exact_bytes_and_their_sha(
    backend: Backend,
) -> None:
    await _claim(backend.ledger)
    pending = await backend.ledger.get(RUN, CALL)

    assert await _complete(backend.ledger)

    entry = await backend.ledger.get(RUN, CALL)
    assert entry is not None and pending is not None
    assert entry.status is LedgerStatus.READY
    assert entry.body == BODY
    assert entry.result_sha256 == sha256_hex(BODY)
    assert entry.evidence_status == "EVIDENCE_FOUND"
    assert entry.query_sha256 == QUERY_SHA
    assert entry.created_at == pending.created_at
    assert entry.error is None


async def test_a_replayed_entry_serves_byte_identical_bodies(backend: Backend) -> None:
    await _ready(backend.ledger)

    first = await backend.ledger.get(RUN, CALL)
    second = await backend.ledger.get(RUN, CALL)

    assert first is not None and second is not None
    assert first.body == second.body == BODY
    served = first.to_json_bytes()
    assert served == second.to_json_bytes()
    assert b',"result":' + BODY + b',"result_sha256":' in served
    assert json.loads(served)["result_sha256"] == sha256_hex(BODY)


async def test_the_claim_token_is_never_served(backend: Backend) -> None:
    await _claim(backend.ledger, "secret-token-123")
    pending = await backend.ledger.get(RUN, CALL)
    await _complete(backend.ledger, "secret-token-123")
    ready = await backend.ledger.get(RUN, CALL)

    for entry in (pending, ready):
        assert entry is not None
        assert b"secret-token-123" not in entry.to_json_bytes()


async def test_a_ready_entry_is_never_overwritten(backend: Backend) -> None:
    await _ready(backend.ledger, "t1")

    assert not await _complete(backend.ledger, "t2", OTHER_BODY)
    assert not await _complete(backend.ledger, "t1", OTHER_BODY)
    assert not await _fail(backend.ledger, "t1")
    assert not await _fail(backend.ledger, "t2")
    blocking = await _claim(backend.ledger, "t3")

    assert blocking is not None and blocking.status is LedgerStatus.READY
    entry = await backend.ledger.get(RUN, CALL)
    assert entry is not None
    assert entry.status is LedgerStatus.READY and entry.body == BODY


async def test_a_retried_complete_of_the_same_write_reports_success(backend: Backend) -> None:
    await _ready(backend.ledger, "t1")

    assert await _complete(backend.ledger, "t1", BODY)


async def test_another_token_cannot_complete_or_fail_a_pending_claim(backend: Backend) -> None:
    await _claim(backend.ledger, "t1")

    assert not await _complete(backend.ledger, "t2")
    assert not await _fail(backend.ledger, "t2")

    entry = await backend.ledger.get(RUN, CALL)
    assert entry is not None and entry.status is LedgerStatus.PENDING


async def test_failing_a_claim_stores_failed_with_the_error_code(backend: Backend) -> None:
    await _claim(backend.ledger)

    assert await _fail(backend.ledger, code="UPSTREAM_TIMEOUT")

    entry = await backend.ledger.get(RUN, CALL)
    assert entry is not None
    assert entry.status is LedgerStatus.FAILED
    assert entry.error == "UPSTREAM_TIMEOUT"
    assert entry.body is None and entry.evidence_status is None
    assert json.loads(entry.to_json_bytes())["result"] is None


async def test_a_failed_entry_can_be_claimed_again_and_then_completed(backend: Backend) -> None:
    await _claim(backend.ledger, "t1")
    await _fail(backend.ledger, "t1")

    assert await _claim(backend.ledger, "t2") is None
    assert not await _complete(backend.ledger, "t1")  # the old holder lost its claim
    assert await _complete(backend.ledger, "t2")

    entry = await backend.ledger.get(RUN, CALL)
    assert entry is not None
    assert entry.status is LedgerStatus.READY and entry.error is None


async def test_complete_without_a_live_claim_still_writes_ready(backend: Backend) -> None:
    # A slow caller whose PENDING lapsed: nothing else claimed the ids, so its result stands.
    assert await _complete(backend.ledger, "t1")

    entry = await backend.ledger.get(RUN, CALL)
    assert entry is not None and entry.status is LedgerStatus.READY


async def test_unknown_ids_and_another_runs_ids_are_not_found(backend: Backend) -> None:
    await _ready(backend.ledger)

    assert await backend.ledger.get(RUN, "call_unknown") is None
    assert await backend.ledger.get("run-other", CALL) is None


async def test_a_run_listing_holds_only_that_runs_entries_in_first_write_order(
    backend: Backend,
) -> None:
    await _ready(backend.ledger, "a", call="call_b")
    await asyncio.sleep(0.003)  # distinct first-write times for the Redis index
    await _claim(backend.ledger, "b", call="call_a")
    await asyncio.sleep(0.003)
    await _ready(backend.ledger, "c", call="call_c")
    await backend.ledger.claim("run-other", "call_z", query_sha256=QUERY_SHA, token="z")

    entries = await _listed(backend.ledger)

    assert [e.tool_call_id for e in entries] == ["call_b", "call_a", "call_c"]
    assert [e.status for e in entries] == [
        LedgerStatus.READY,
        LedgerStatus.PENDING,
        LedgerStatus.READY,
    ]
    assert await _listed(backend.ledger, "run-unknown") == []


async def test_a_run_is_listed_in_pages_that_follow_each_other_through_the_cursor(
    backend: Backend,
) -> None:
    for i in range(5):
        await _ready(backend.ledger, f"t{i}", call=f"call_{i}")
        await asyncio.sleep(0.002)

    first = await backend.ledger.list_run(RUN, after=None, limit=2, with_bodies=False)
    second = await backend.ledger.list_run(RUN, after=first.next_cursor, limit=2, with_bodies=True)
    last = await backend.ledger.list_run(RUN, after=second.next_cursor, limit=2, with_bodies=False)

    assert [e.tool_call_id for e in first.entries] == ["call_0", "call_1"]
    assert first.next_cursor == "call_1"
    assert [e.tool_call_id for e in second.entries] == ["call_2", "call_3"]
    assert [e.tool_call_id for e in last.entries] == ["call_4"] and last.next_cursor is None
    assert all(e.body is None and e.result_sha256 for e in first.entries + last.entries)
    assert all(e.body == BODY for e in second.entries)


async def test_a_cursor_that_is_not_an_entry_of_the_run_is_not_found(
    backend: Backend,
) -> None:
    await _ready(backend.ledger)

    with pytest.raises(NotFound):
        await backend.ledger.list_run(RUN, after="call_nobody", limit=10, with_bodies=False)


async def test_ping_answers_when_the_store_is_up(backend: Backend) -> None:
    await backend.ledger.ping()


# -- expiry ------------------------------------------------------------------------------


async def test_a_pending_claim_left_by_a_crash_expires_after_the_pending_ttl(
    backend: Backend,
) -> None:
    await _claim(backend.ledger, "crashed")

    await backend.advance(PENDING_TTL_S - 1)
    assert await _claim(backend.ledger, "t2") is not None

    await backend.advance(2)
    assert await backend.ledger.get(RUN, CALL) is None
    assert await _listed(backend.ledger) == []
    assert await _claim(backend.ledger, "t2") is None


async def test_ready_and_failed_entries_live_for_the_ledger_ttl(backend: Backend) -> None:
    await _ready(backend.ledger, "t1")
    await backend.ledger.claim(RUN, "call_f", query_sha256=QUERY_SHA, token="f")
    await backend.ledger.fail(RUN, "call_f", token="f", query_sha256=QUERY_SHA, error_code="X")

    await backend.advance(PENDING_TTL_S * 10)
    assert len(await _listed(backend.ledger)) == 2

    await backend.advance(TTL_S - PENDING_TTL_S * 10 + 1)
    assert await backend.ledger.get(RUN, CALL) is None
    assert await backend.ledger.get(RUN, "call_f") is None
    assert await _listed(backend.ledger) == []


# -- racing writers ----------------------------------------------------------------------


async def test_exactly_one_of_many_concurrent_claims_wins(backend: Backend) -> None:
    ledgers = [backend.new_ledger() for _ in range(4)]

    outcomes = await asyncio.gather(*(_claim(ledgers[i % 4], f"t{i}") for i in range(32)))

    assert sum(outcome is None for outcome in outcomes) == 1


async def test_exactly_one_of_many_concurrent_completes_wins_and_its_bytes_stay(
    backend: Backend,
) -> None:
    ledgers = [backend.new_ledger() for _ in range(4)]
    bodies = [BODY.replace(b"first", f"w{i:02}".encode()) for i in range(32)]

    outcomes = await asyncio.gather(
        *(_complete(ledgers[i % 4], f"t{i}", bodies[i]) for i in range(32))
    )

    assert sum(outcomes) == 1
    winner = outcomes.index(True)
    entry = await backend.ledger.get(RUN, CALL)
    assert entry is not None and entry.body == bodies[winner]
    assert entry.result_sha256 == sha256_hex(bodies[winner])


async def test_a_ready_entry_survives_a_storm_of_racing_writers(backend: Backend) -> None:
    await _ready(backend.ledger, "t1")
    ledgers = [backend.new_ledger() for _ in range(4)]
    before = await backend.ledger.get(RUN, CALL)

    async def race(i: int) -> object:
        ledger, token = ledgers[i % 4], f"racer{i}"
        if i % 3 == 0:
            return await _claim(ledger, token)
        if i % 3 == 1:
            return await _fail(ledger, token)
        return await _complete(ledger, token, OTHER_BODY)

    outcomes = await asyncio.gather(*(race(i) for i in range(48)))

    assert not any(outcome is True or outcome is None for outcome in outcomes)
    after = await backend.ledger.get(RUN, CALL)
    assert after == before


async def test_racing_lookups_claim_once_and_only_the_winner_completes(backend: Backend) -> None:
    ledgers = [backend.new_ledger() for _ in range(4)]

    async def lookup(i: int) -> bool:
        ledger, token = ledgers[i % 4], f"t{i}"
        if await _claim(ledger, token) is not None:
            return False
        await asyncio.sleep(0.01)  # the py-rag call
        return await _complete(ledger, token, BODY)

    outcomes = await asyncio.gather(*(lookup(i) for i in range(16)))

    assert sum(outcomes) == 1


# -- Redis only --------------------------------------------------------------------------


@pytest.fixture
async def redis_ledger(redis_client: aioredis.Redis, redis_url: str) -> AsyncIterator[RedisLedger]:
    ledger = RedisLedger.from_url(redis_url, ttl_s=TTL_S, pending_ttl_s=PENDING_TTL_S)
    yield ledger
    await ledger.aclose()


@pytest.mark.redis
async def test_redis_keys_put_the_run_id_in_a_hash_tag(
    redis_ledger: RedisLedger, redis_client: aioredis.Redis
) -> None:
    await _ready(redis_ledger)
    await _claim(redis_ledger, call="call_x2")

    keys = sorted(k.decode() if isinstance(k, bytes) else k for k in await redis_client.keys("*"))

    assert keys == [
        "lk:ledger-run:{run-42}",
        "lk:ledger:{run-42}:call_x1",
        "lk:ledger:{run-42}:call_x2",
    ]
    assert entry_key(RUN, CALL) == "lk:ledger:{run-42}:call_x1"
    assert run_index_key(RUN) == "lk:ledger-run:{run-42}"
    assert len({key_slot(k.encode()) for k in keys}) == 1


@pytest.mark.redis
async def test_redis_sets_the_pending_ttl_on_a_claim_and_the_ledger_ttl_on_ready(
    redis_ledger: RedisLedger, redis_client: aioredis.Redis
) -> None:
    await _claim(redis_ledger)
    pending_pttl = await redis_client.pttl(entry_key(RUN, CALL))
    index_pttl = await redis_client.pttl(run_index_key(RUN))
    assert PENDING_TTL_S * 1000 - 2000 < pending_pttl <= PENDING_TTL_S * 1000
    assert PENDING_TTL_S * 1000 - 2000 < index_pttl <= PENDING_TTL_S * 1000

    await _complete(redis_ledger)

    for key in (entry_key(RUN, CALL), run_index_key(RUN)):
        assert TTL_S * 1000 - 2000 < await redis_client.pttl(key) <= TTL_S * 1000


@pytest.mark.redis
async def test_redis_sets_the_ledger_ttl_on_failed(
    redis_ledger: RedisLedger, redis_client: aioredis.Redis
) -> None:
    await _claim(redis_ledger)
    await _fail(redis_ledger)

    assert TTL_S * 1000 - 2000 < await redis_client.pttl(entry_key(RUN, CALL)) <= TTL_S * 1000


@pytest.mark.redis
async def test_a_new_claim_never_shortens_the_run_index_ttl(
    redis_ledger: RedisLedger, redis_client: aioredis.Redis
) -> None:
    await _ready(redis_ledger)

    await _claim(redis_ledger, call="call_later")

    assert await redis_client.pttl(run_index_key(RUN)) > PENDING_TTL_S * 1000


@pytest.mark.redis
async def test_redis_stores_the_response_bytes_verbatim(
    redis_ledger: RedisLedger, redis_client: aioredis.Redis
) -> None:
    await _ready(redis_ledger)

    assert await redis_client.hget(entry_key(RUN, CALL), "body") == BODY


@pytest.mark.redis
async def test_redis_transitions_work_after_the_script_cache_is_flushed(
    redis_ledger: RedisLedger, redis_client: aioredis.Redis
) -> None:
    await _claim(redis_ledger)
    await redis_client.script_flush()

    assert await _complete(redis_ledger)


@pytest.mark.redis
async def test_a_foreign_value_under_a_ledger_key_is_not_served_as_evidence(
    redis_ledger: RedisLedger, redis_client: aioredis.Redis
) -> None:
    await redis_client.hset(entry_key(RUN, CALL), mapping={"status": "DONE", "body": BODY})

    with pytest.raises(LedgerUnavailable):
        await redis_ledger.get(RUN, CALL)


@pytest.mark.redis
async def test_the_redis_client_fails_fast_by_configuration(redis_url: str) -> None:
    ledger = RedisLedger.from_url(redis_url, ttl_s=TTL_S, pending_ttl_s=PENDING_TTL_S)
    try:
        kwargs = ledger._client.connection_pool.connection_kwargs
        assert kwargs["socket_connect_timeout"] == CONNECT_TIMEOUT_S <= 2
        assert kwargs["socket_timeout"] == SOCKET_TIMEOUT_S <= 2
    finally:
        await ledger.aclose()


class Relay:
    """What a test proxy to Redis does with one connection: by default, passes everything."""

    def passes(self, request: bytes) -> bool:
        """False: the connection is closed, and this request is not passed on."""
        return True

    def hold_s(self) -> float:
        """How long to hold the next answer before passing it on."""
        return 0.0


@asynccontextmanager
async def redis_proxy(redis_url: str, relay: Callable[[int], Relay]) -> AsyncIterator[str]:
    """A TCP proxy to Redis; `relay(n)` rules the n-th connection (from 1)."""
    port = int(redis_url.rsplit(":", 1)[1].split("/")[0])
    connections = 0

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        rules = relay(connections)
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", port)

        async def requests() -> None:
            while chunk := await reader.read(65536):
                if not rules.passes(chunk):
                    writer.close()
                    up_writer.close()
                    return
                up_writer.write(chunk)
                await up_writer.drain()

        async def answers() -> None:
            while chunk := await up_reader.read(65536):
                if held := rules.hold_s():
                    await asyncio.sleep(held)
                writer.write(chunk)
                await writer.drain()

        with suppress(OSError, asyncio.CancelledError):
            await asyncio.gather(requests(), answers())
        writer.close()
        up_writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    async with server:
        yield f"redis://127.0.0.1:{server.sockets[0].getsockname()[1]}/0"
        server.close()


def slow_answers(redis_url: str, delay_s: float) -> AbstractAsyncContextManager[str]:
    """A proxy that passes everything at once, except that it holds the answers to ledger
    scripts (EVALSHA) and to commands sent after them for `delay_s`."""

    class HoldAfterScript(Relay):
        scripted = False

        def passes(self, request: bytes) -> bool:
            self.scripted = self.scripted or b"EVALSHA" in request
            return True

        def hold_s(self) -> float:
            return delay_s if self.scripted else 0.0

    return redis_proxy(redis_url, lambda _: HoldAfterScript())


@pytest.mark.redis
async def test_a_claim_whose_answer_times_out_is_released_as_failed(
    redis_ledger: RedisLedger, redis_client: aioredis.Redis, redis_url: str
) -> None:
    await _ready(redis_ledger, call="call_warm")  # the server now knows the scripts
    await redis_ledger.fail(RUN, "call_warm2", token="t", query_sha256=QUERY_SHA, error_code="X")
    async with slow_answers(redis_url, delay_s=0.3) as slow_url:
        ledger = RedisLedger.from_url(
            slow_url, ttl_s=TTL_S, pending_ttl_s=PENDING_TTL_S, socket_timeout_s=0.1
        )
        try:
            with pytest.raises(LedgerUnavailable):
                await _claim(ledger)  # the claim lands; its answer comes too late
        finally:
            await ledger.aclose()
    entry = await redis_client.hgetall(entry_key(RUN, CALL))  # type: ignore[misc]

    assert entry[b"status"] == b"FAILED" and entry[b"error"] == b"LEDGER_UNAVAILABLE"
    retry = RedisLedger.from_url(redis_url, ttl_s=TTL_S, pending_ttl_s=PENDING_TTL_S)
    try:
        assert await _claim(retry, token="t2") is None  # the same ids run again at once
    finally:
        await retry.aclose()


@pytest.mark.redis
async def test_a_pool_that_runs_dry_is_overload_not_a_ledger_outage(
    redis_client: aioredis.Redis, redis_url: str
) -> None:
    async with slow_answers(redis_url, delay_s=0.3) as slow_url:
        ledger = RedisLedger.from_url(
            slow_url,
            ttl_s=TTL_S,
            pending_ttl_s=PENDING_TTL_S,
            max_connections=1,
            pool_timeout_s=0.05,
        )
        try:
            outcomes = await asyncio.gather(
                _claim(ledger, call="a"), _claim(ledger, call="b"), return_exceptions=True
            )
        finally:
            await ledger.aclose()

    assert sorted(type(o).__name__ for o in outcomes) == ["NoneType", "Overloaded"]
    (refused,) = [o for o in outcomes if isinstance(o, Overloaded)]
    assert refused.code == "OVERLOADED" and refused.details == {"pool": "ledger"}


@pytest.mark.parametrize(
    "operation",
    [
        lambda lg: _claim(lg),
        lambda lg: _complete(lg),
        lambda lg: _fail(lg),
        lambda lg: lg.get(RUN, CALL),
        lambda lg: lg.list_run(RUN, after=None, limit=10, with_bodies=False),
        lambda lg: lg.ping(),
    ],
    ids=["claim", "complete", "fail", "get", "list_run", "ping"],
)
async def test_an_unreachable_redis_raises_ledger_unavailable_quickly(
    operation: Callable[[RedisLedger], Awaitable[object]],
) -> None:
    ledger = RedisLedger.from_url(CLOSED_PORT_URL, ttl_s=TTL_S, pending_ttl_s=PENDING_TTL_S)
    started = time.monotonic()
    try:
        with pytest.raises(LedgerUnavailable) as caught:
            await operation(ledger)
    finally:
        await ledger.aclose()

    assert time.monotonic() - started < 2.0
    assert caught.value.code == "LEDGER_UNAVAILABLE"
    assert "127.0.0.1:1" not in caught.value.message


async def test_the_memory_ledger_sweeps_expired_entries_of_other_runs() -> None:
    clock = FakeClock()
    ledger = MemoryLedger(ttl_s=TTL_S, pending_ttl_s=PENDING_TTL_S, clock=clock)
    for i in range(10):
        await ledger.claim(f"run-{i}", CALL, query_sha256=QUERY_SHA, token="t")

    clock.now += PENDING_TTL_S + 61
    await ledger.claim("run-new", CALL, query_sha256=QUERY_SHA, token="t")

    assert list(ledger._runs) == ["run-new"]


# The lookup's transitions on a standalone Redis go over ledger_redis_lean.py.


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("redis://127.0.0.1:6380/2", Endpoint("127.0.0.1", 6380, 2, None, None)),
        ("redis://localhost", Endpoint("localhost", 6379, 0, None, None)),
        ("redis://:p%40ss@h:1/0", Endpoint("h", 1, 0, None, "p@ss")),
        ("redis://me:pw@h:1", Endpoint("h", 1, 0, "me", "pw")),
        ("rediss://h:1/0", None),  # TLS stays with redis-py
        ("unix:///tmp/redis.sock", None),
        ("redis://h:1/0?health_check_interval=2", None),
        ("redis://h:1/zero", None),
    ],
)
def test_only_plain_redis_urls_take_the_lean_path(url: str, expected: Endpoint | None) -> None:
    assert Endpoint.from_url(url) == expected


def test_commands_are_packed_as_redis_py_packs_them() -> None:
    parts: list[str | bytes | int] = ["EVALSHA", b"ab", 2, "k{é}", b"\x00\r\n", -5, 0, ""]
    connection = RedisPyConnection()
    assert pack(parts) == b"".join(connection.pack_command(*parts))


@pytest.mark.redis
async def test_a_cancelled_transition_leaves_no_reply_for_the_next_one(
    redis_ledger: RedisLedger, redis_url: str
) -> None:
    await _ready(redis_ledger, call="call_warm")  # the server now knows the scripts
    async with slow_answers(redis_url, delay_s=0.3) as slow_url:
        ledger = RedisLedger.from_url(
            slow_url, ttl_s=TTL_S, pending_ttl_s=PENDING_TTL_S, max_connections=1
        )
        try:
            claim = asyncio.ensure_future(_claim(ledger))
            await asyncio.sleep(0.1)  # the claim is sent; its answer is held
            claim.cancel()
            with suppress(asyncio.CancelledError):
                await claim
            # Had the connection been reused, this would read the claim's late answer (nil).
            assert await _complete(ledger) is True
        finally:
            await ledger.aclose()
    assert (await redis_ledger.get(RUN, CALL)) == _entry_ready()


def _entry_ready() -> LedgerEntry:
    return LedgerEntry(
        run_id=RUN,
        tool_call_id=CALL,
        tool_name="lookup_knowledge",
        status=LedgerStatus.READY,
        query_sha256=QUERY_SHA,
        created_at=ANY_TIME,
        evidence_status="EVIDENCE_FOUND",
        body=BODY,
        result_sha256=sha256_hex(BODY),
        error=None,
    )


class _AnyTime(str):
    def __eq__(self, other: object) -> bool:
        return isinstance(other, str) and other.endswith("Z")

    __hash__ = str.__hash__


ANY_TIME = _AnyTime("any")


@pytest.mark.redis
async def test_a_connection_the_server_closed_is_not_used_again(
    redis_ledger: RedisLedger, redis_client: aioredis.Redis
) -> None:
    assert await _claim(redis_ledger) is None
    await redis_client.client_kill_filter(_type="normal", skipme=True)
    await asyncio.sleep(0.05)
    assert await _complete(redis_ledger) is True


@pytest.mark.redis
async def test_the_lean_path_logs_in_and_selects_the_database(tmp_path: Path) -> None:
    with redis_server(tmp_path) as url:
        admin = aioredis.Redis.from_url(url)
        try:
            await admin.execute_command("ACL", "SETUSER", "lk", "on", ">pw-1", "~*", "+@all")
            await admin.config_set("requirepass", "secret-1")
            base = url.removeprefix("redis://").rsplit("/", 1)[0]
            for login, db in (("lk:pw-1", 3), (":secret-1", 5)):
                ledger = RedisLedger.from_url(
                    f"redis://{login}@{base}/{db}", ttl_s=TTL_S, pending_ttl_s=PENDING_TTL_S
                )
                try:
                    assert await _claim(ledger) is None
                    assert await _complete(ledger) is True
                finally:
                    await ledger.aclose()
                reader = aioredis.Redis.from_url(f"redis://{login}@{base}/{db}")
                try:
                    assert await reader.hget(entry_key(RUN, CALL), "body") == BODY
                finally:
                    await reader.aclose()
            wrong = RedisLedger.from_url(
                f"redis://:wrong@{base}/0", ttl_s=TTL_S, pending_ttl_s=PENDING_TTL_S
            )
            try:
                with pytest.raises(LedgerUnavailable):
                    await _claim(wrong)
            finally:
                await wrong.aclose()
        finally:
            # The fixture stops the server with an unauthenticated SHUTDOWN: lift the password
            # (admin's connection logged in before it was set, and stays logged in).
            await admin.config_set("requirepass", "")
            await admin.aclose()


def drops_first_script(redis_url: str) -> AbstractAsyncContextManager[str]:
    """A proxy that closes its first connection on that connection's first script (EVALSHA)
    without passing it on; everything else passes."""

    class DropOnScript(Relay):
        def passes(self, request: bytes) -> bool:
            return b"EVALSHA" not in request

    return redis_proxy(redis_url, lambda n: DropOnScript() if n == 1 else Relay())


@pytest.mark.redis
async def test_a_transition_whose_connection_drops_is_sent_once_more(redis_url: str) -> None:
    async with drops_first_script(redis_url) as dropping_url:
        ledger = RedisLedger.from_url(dropping_url, ttl_s=TTL_S, pending_ttl_s=PENDING_TTL_S)
        try:
            assert await _claim(ledger) is None
            assert await _complete(ledger) is True
        finally:
            await ledger.aclose()


@pytest.mark.redis
def test_the_lean_path_runs_on_uvloop_as_served(redis_url: str) -> None:
    async def transitions() -> tuple[LedgerEntry | None, bool]:
        ledger = RedisLedger.from_url(redis_url, ttl_s=TTL_S, pending_ttl_s=PENDING_TTL_S)
        try:
            return await _claim(ledger, call="call_uv"), await _complete(ledger, call="call_uv")
        finally:
            await ledger.aclose()

    assert uvloop.run(transitions()) == (None, True)
