"""POST /guard/verify as a route: its role, its OpenAPI description, and its Redis round trips
(one report of 20 citations across 10 tool calls, on a private redis-server and cluster)."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis.asyncio as aioredis

from guard_support import cite, memory_store, open_guard, report
from lookup_knowledge.adapters.ledger_redis import RedisLedger
from redis_counting import count_round_trips

LOOKUP_TOKEN = "agent-secret-1"
LEDGER_TOKEN = "guard-secret-1"
AUTH = {"lookup_api_tokens": LOOKUP_TOKEN, "ledger_api_tokens": LEDGER_TOKEN}
RUN = "run-a"


@pytest.mark.parametrize(
    ("authorization", "status", "code"),
    [
        (None, 401, "UNAUTHORIZED"),
        ("Bearer wrong", 401, "UNAUTHORIZED"),
        (LEDGER_TOKEN, 401, "UNAUTHORIZED"),  # no scheme
        (f"Bearer {LOOKUP_TOKEN}", 403, "FORBIDDEN"),  # an agent cannot call the guard
        (f"Bearer {LEDGER_TOKEN}", 200, None),
    ],
    ids=["no token", "unknown token", "no scheme", "lookup role", "ledger role"],
)
async def test_the_guard_route_takes_a_token_of_the_ledger_role(
    tmp_path: Path, authorization: str | None, status: int, code: str | None
) -> None:
    headers = {"Authorization": authorization} if authorization else {}
    async with open_guard(tmp_path, memory_store().ledger, **AUTH) as guard:
        response = await guard.verify(RUN, report(cite("call_1", "d#chunk-1")), headers=headers)

    assert response.status_code == status, response.text
    if code is not None:
        assert response.json()["error"]["code"] == code
    if status == 401:
        assert response.headers["www-authenticate"] == "Bearer"
        assert guard.outcomes.outcomes == []  # refused before anything was judged


async def test_the_route_is_described_in_openapi_with_its_models_and_errors(
    tmp_path: Path,
) -> None:
    async with open_guard(tmp_path, memory_store().ledger) as guard:
        spec = (await guard.client.get("/openapi.json")).json()

    operation = spec["paths"]["/guard/verify"]["post"]
    assert operation["operationId"] == "verifyReport"
    body = operation["requestBody"]["content"]["application/json"]["schema"]
    assert body == {"$ref": "#/components/schemas/VerifyRequest"}
    ok = operation["responses"]["200"]["content"]["application/json"]["schema"]
    assert ok == {"$ref": "#/components/schemas/VerifyResult"}
    # 401 and 403 are listed only when the ledger role has tokens (test_openapi_schema.py).
    assert {"400", "413", "422", "503"} <= set(operation["responses"])
    error = operation["responses"]["503"]["content"]["application/json"]["schema"]
    assert error["$ref"].endswith("ErrorEnvelope")
    schemas = spec["components"]["schemas"]
    assert "GuardReport" in schemas
    assert schemas["VerifyRequest"]["required"] == ["run_id", "report"]


@pytest.mark.redis
@pytest.mark.parametrize("cluster", [False, True], ids=["redis", "redis-cluster"])
async def test_twenty_citations_across_ten_calls_cost_one_redis_round_trip(
    tmp_path: Path, request: pytest.FixtureRequest, cluster: bool
) -> None:
    url = request.getfixturevalue("redis_cluster_url" if cluster else "redis_url")
    admin: aioredis.Redis | aioredis.RedisCluster = (
        aioredis.RedisCluster.from_url(url) if cluster else aioredis.Redis.from_url(url)
    )
    await admin.flushall()
    ledger = RedisLedger.from_url(url, ttl_s=3600, pending_ttl_s=30, cluster=cluster)
    calls = [f"call_{i}" for i in range(10)]
    data = report(*[cite(call, f"{call}#chunk-{n}") for call in calls for n in (1, 2)])
    try:
        async with open_guard(tmp_path, ledger) as guard:
            for call in calls:
                keys = [f"{call}#chunk-1", f"{call}#chunk-2"]
                assert (await guard.lookup(RUN, call, keys)).status_code == 200
            # The reads' client connects now: on a standalone Redis the lookups' scripts went
            # over the lean client (adapters/ledger_redis_lean.py), not redis-py's pool.
            await ledger.ping()
            if not cluster:
                await admin.config_resetstat()

            with count_round_trips() as trips:
                response = await guard.verify(RUN, data)

            stats = None if cluster else await admin.info("commandstats")
    finally:
        await ledger.aclose()
        await admin.flushall()
        await admin.aclose()

    assert response.status_code == 200 and response.json()["ok"] is True
    assert len(response.json()["evidence_snapshot"]) == 20
    assert trips.count <= 2
    assert trips.batches == [["HMGET"] * 10]
    if stats is not None:  # the server's own count agrees: ten reads, nothing else
        served = {n: s["calls"] for n, s in stats.items() if not n.startswith("cmdstat_config")}
        assert served == {"cmdstat_hmget": 10}  # (CONFIG: the reset itself)
