"""REDIS_CLUSTER=true: the service keeps its ledger in a real Redis Cluster."""

from __future__ import annotations

import pytest
import respx

from builders import pyrag_body, raw_hit
from support import PYRAG_SEARCH_URL, OpenClient, RecordingAudit

pytestmark = pytest.mark.redis


async def test_lookups_replays_and_ledger_reads_work_on_a_redis_cluster(
    open_client: OpenClient, redis_cluster_url: str
) -> None:
    runs = [f"run-{i}" for i in range(6)]  # hash tags spread the runs over the nodes
    async with open_client(
        audit=RecordingAudit(), redis_url=redis_cluster_url, redis_cluster=True
    ) as client:
        with respx.mock() as mock:
            route = mock.post(PYRAG_SEARCH_URL).respond(
                200, json=pyrag_body([raw_hit("a#chunk-0")])
            )
            for run in runs:
                body = {"run_id": run, "tool_call_id": "call-1", "query": "redis memory"}
                first = await client.post("/lookup_knowledge", json=body)
                again = await client.post("/lookup_knowledge", json=body)
                entry = await client.get(f"/ledger/{run}/call-1")
                listing = await client.get(f"/ledger/{run}")
                assert first.status_code == 200 and again.content == first.content
                assert entry.json()["status"] == "READY"
                assert entry.json()["result"] == first.json()
                assert [e["tool_call_id"] for e in listing.json()["entries"]] == ["call-1"]
        ready = await client.get("/readyz")
    assert route.call_count == len(runs)
    assert ready.json()["checks"]["ledger"]["status"] == "up"
