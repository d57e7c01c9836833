"""Support for the guard's API tests: an app over a chosen ledger, real lookups, reports."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import redis.asyncio as aioredis
import respx

from builders import pyrag_body, raw_hit
from lookup_knowledge.adapters.ledger_memory import MemoryLedger
from lookup_knowledge.adapters.ledger_redis import RedisLedger, entry_key
from lookup_knowledge.app import create_app
from lookup_knowledge.domain.guard import GuardOutcome
from support import PYRAG_SEARCH_URL, RecordingAudit, make_settings

Ledger = MemoryLedger | RedisLedger


class RecordingOutcomes:
    """Guard outcome port that keeps every outcome, for asserting what the guard hands over."""

    def __init__(self) -> None:
        self.outcomes: list[GuardOutcome] = []

    def verification_finished(self, outcome: GuardOutcome) -> None:
        self.outcomes.append(outcome)


@dataclass
class Store:
    """A ledger and the means to forge its entries behind the service's back."""

    ledger: Ledger
    # (run_id, tool_call_id, change of the stored body)
    tamper: Callable[[str, str, Callable[[bytes], bytes]], Awaitable[None]]
    # (from_run, to_run, tool_call_id): copy an entry into another run's place
    move: Callable[[str, str, str], Awaitable[None]]


def memory_store() -> Store:
    ledger = MemoryLedger(ttl_s=3600, pending_ttl_s=30)

    async def tamper(run: str, call: str, change: Callable[[bytes], bytes]) -> None:
        slot = ledger._runs[run][call]
        assert slot.entry.body is not None
        slot.entry = dataclasses.replace(slot.entry, body=change(slot.entry.body))

    async def move(source: str, target: str, call: str) -> None:
        ledger._runs.setdefault(target, {})[call] = dataclasses.replace(ledger._runs[source][call])

    return Store(ledger, tamper, move)


def redis_store(url: str, admin: aioredis.Redis) -> Store:
    ledger = RedisLedger.from_url(url, ttl_s=3600, pending_ttl_s=30)

    async def tamper(run: str, call: str, change: Callable[[bytes], bytes]) -> None:
        body = await admin.hget(entry_key(run, call), "body")
        assert body is not None
        await admin.hset(entry_key(run, call), "body", change(body))

    async def move(source: str, target: str, call: str) -> None:
        fields = await admin.hgetall(entry_key(source, call))
        await admin.hset(entry_key(target, call), mapping=fields)

    return Store(ledger, tamper, move)


@dataclass
class Guard:
    client: httpx.AsyncClient
    pyrag: respx.Route
    outcomes: RecordingOutcomes
    headers: dict[str, str] = field(default_factory=dict)

    async def lookup(
        self, run: str, call: str, keys: list[str], *, pyrag_status: int = 200
    ) -> httpx.Response:
        """A real lookup through the service; py-rag answers hits with these evidence keys."""
        hits = [raw_hit(key, 0.9) for key in keys]
        self.pyrag.respond(pyrag_status, json=pyrag_body(hits))
        body = {"run_id": run, "tool_call_id": call, "query": f"query of {call}"}
        return await self.client.post("/lookup_knowledge", json=body)

    async def verify(self, run: str, report: dict[str, Any], **kwargs: Any) -> httpx.Response:
        kwargs.setdefault("headers", self.headers)
        return await self.client.post(
            "/guard/verify", json={"run_id": run, "report": report}, **kwargs
        )


@asynccontextmanager
async def open_guard(
    tmp_path: Path, ledger: Ledger, *, record: bool = True, **settings: Any
) -> AsyncIterator[Guard]:
    """The app over `ledger`; outcomes go to a recorder, or with `record=False` to the
    service's own default (metrics and the log line)."""
    outcomes = RecordingOutcomes()
    app = create_app(
        make_settings(tmp_path, **settings),
        ledger=ledger,
        audit=RecordingAudit(),
        guard_outcomes=outcomes if record else None,
    )
    async with app.router.lifespan_context(app), respx.mock(assert_all_called=False) as mock:
        route = mock.post(PYRAG_SEARCH_URL)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://lk.test") as client:
            yield Guard(client, route, outcomes)


def excerpt(key: str) -> str:
    """The excerpt a lookup shows for an evidence key (see builders.raw_hit)."""
    return f"Excerpt of {key}."


def cite(call: str, doc: str | None = None, **fields: Any) -> dict[str, Any]:
    kind = fields.pop("kind", "NORMAL" if doc is not None else "NEGATIVE_OBSERVATION")
    citation: dict[str, Any] = {"tool_call_id": call, "kind": kind, **fields}
    if doc is not None:
        citation["document_id"] = doc
    return citation


def report(*citations: dict[str, Any]) -> dict[str, Any]:
    """One analysis per citation, a conclusion on all of them, one limitation."""
    analyses = [
        {"id": f"a{i}", "text": f"Finding {i}.", "citations": [c]} for i, c in enumerate(citations)
    ]
    return {
        "analyses": analyses,
        "conclusion": {"text": "So it is.", "based_on": [a["id"] for a in analyses]},
        "action_plan": [],
        "limitations": ["Only the knowledge base was searched."],
    }
