"""Overload and recovery through the HTTP API (docs/http-api.md#overload).

py-rag here is a real local server (tests/pyrag_server.py), so the service's real connection
pool is exercised: respx would bypass it.
"""

from __future__ import annotations

import asyncio
from typing import Any

from pyrag_server import pyrag_server
from support import OpenClient, RecordingAudit

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
