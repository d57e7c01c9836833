"""Evidence ledger in Redis: one hash per tool call, one sorted-set index per run.

See docs/ledger.md#key-layout.

The keys and an entry's fields are laid out in ledger_redis_layout.py.
Every transition is one Lua script (ledger_redis_scripts.py), so the check and the write are
atomic in Redis, and a retry of a caller's own write is answered as a success.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import Any, Self, cast

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.commands.core import AsyncScript
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import MaxConnectionsError, RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.typing import EncodableT

from lookup_knowledge.adapters import ledger_redis_scripts as scripts
from lookup_knowledge.adapters.ledger_redis_layout import (
    SERVED_FIELDS,
    SUMMARY_FIELDS,
    entry_key,
    entry_of,
    fields_of,
    pairs,
    run_index_key,
)
from lookup_knowledge.adapters.ledger_redis_lean import LeanScripts, Script
from lookup_knowledge.domain.errors import LedgerUnavailable, NotFound, Overloaded
from lookup_knowledge.domain.ledger import (
    TOOL_NAME,
    LedgerEntry,
    RunPage,
    sha256_hex,
    utc_now_iso,
)

# Defaults of REDIS_CONNECT_TIMEOUT_S, REDIS_SOCKET_TIMEOUT_S, REDIS_POOL_TIMEOUT_S and of the
# pool size (MAX_CONCURRENT_LOOKUPS + 16); see docs/ledger.md#timeouts. An unreachable Redis must
# fail a lookup fast (503), not hold it for the client's own defaults.
CONNECT_TIMEOUT_S = 1.0
SOCKET_TIMEOUT_S = 2.0
POOL_TIMEOUT_S = 1.0
MAX_CONNECTIONS = 40


class RedisLedger:
    """The deployed ledger backend: a pooled redis-py client, and on a standalone Redis behind a
    plain `redis://` URL a lean client with a pool of its own for the lookup's transitions;
    opened and closed by the lifespan."""

    def __init__(
        self,
        client: aioredis.Redis | aioredis.RedisCluster,
        *,
        ttl_s: int,
        pending_ttl_s: int,
        lean: LeanScripts | None = None,
    ) -> None:
        self._client = client
        # The transitions of a lookup on a standalone Redis (ledger_redis_lean.py).
        self._lean = lean
        # A cluster client discovers its nodes on first use; concurrent first uses race inside
        # redis-py and drop connections, so the first caller initialises it alone.
        self._cluster_ready = not isinstance(client, aioredis.RedisCluster)
        self._init_lock = asyncio.Lock()
        self._ttl_ms = ttl_s * 1000
        self._pending_ttl_ms = pending_ttl_s * 1000
        self._claim = client.register_script(scripts.CLAIM)
        self._complete = client.register_script(scripts.COMPLETE)
        self._fail = client.register_script(scripts.FAIL)
        self._page = client.register_script(scripts.PAGE)
        self._lean_claim = Script.of(scripts.CLAIM)
        self._lean_complete = Script.of(scripts.COMPLETE)
        self._lean_fail = Script.of(scripts.FAIL)

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        ttl_s: int,
        pending_ttl_s: int,
        cluster: bool = False,
        connect_timeout_s: float = CONNECT_TIMEOUT_S,
        socket_timeout_s: float = SOCKET_TIMEOUT_S,
        pool_timeout_s: float = POOL_TIMEOUT_S,
        max_connections: int = MAX_CONNECTIONS,
    ) -> Self:
        """Build the pooled client (one timeout per thing, one immediate retry), and the lean
        client where the URL allows one (docs/ledger.md#timeouts); both connect lazily.

        Each pool is bounded: a flood of callers waits up to `pool_timeout_s` for a connection
        instead of opening one each. With `cluster`, `url` names any node of a Redis Cluster
        (bounded per node, refusing at once past the bound): a run's keys share one slot (the
        hash tag), so every script still touches a single node.
        """
        options: dict[str, Any] = {
            "decode_responses": False,
            "socket_connect_timeout": connect_timeout_s,
            "socket_timeout": socket_timeout_s,
            "retry": Retry(NoBackoff(), 1),
            "max_connections": max_connections,
        }
        client: aioredis.Redis | aioredis.RedisCluster
        lean = None
        if cluster:
            client = aioredis.RedisCluster.from_url(url, **options)
        else:
            pool = aioredis.BlockingConnectionPool.from_url(url, timeout=pool_timeout_s, **options)
            client = aioredis.Redis.from_pool(pool)  # the client owns the pool and closes it
            lean = LeanScripts.for_url(
                url,
                connect_timeout_s=connect_timeout_s,
                socket_timeout_s=socket_timeout_s,
                pool_timeout_s=pool_timeout_s,
                max_connections=max_connections,
            )
        return cls(client, ttl_s=ttl_s, pending_ttl_s=pending_ttl_s, lean=lean)

    async def aclose(self) -> None:
        """Close the clients and their pools."""
        if self._lean is not None:
            await self._lean.aclose()
        await self._client.aclose()

    async def claim(
        self, run_id: str, tool_call_id: str, *, query_sha256: str, token: str
    ) -> LedgerEntry | None:
        """None when this caller now holds the PENDING claim; else the entry that blocks it."""
        args = [*_head(run_id, tool_call_id, token, query_sha256), self._pending_ttl_ms, _score()]
        try:
            with _store_errors("claim"):
                reply = await self._transition(
                    self._lean_claim, self._claim, self._keys(run_id, tool_call_id), args
                )
        except LedgerUnavailable as exc:
            if isinstance(exc.__cause__, RedisTimeoutError):
                # The script may have run with its answer lost: release the claim it may have
                # made, so a retry of these ids is not refused as in flight until it expires.
                with suppress(LedgerUnavailable, Overloaded):
                    await self.fail(
                        run_id,
                        tool_call_id,
                        token=token,
                        query_sha256=query_sha256,
                        error_code=exc.code,
                    )
            raise
        if reply is None:
            return None
        return entry_of(pairs(cast(Sequence[bytes], reply)))

    async def complete(
        self,
        run_id: str,
        tool_call_id: str,
        *,
        token: str,
        query_sha256: str,
        body: bytes,
        evidence_status: str,
    ) -> bool:
        """Write READY with the exact response bytes; False if another writer got there first."""
        args = [
            *_head(run_id, tool_call_id, token, query_sha256),
            bytes(body),
            sha256_hex(body),
            evidence_status,
            self._ttl_ms,
            _score(),
        ]
        with _store_errors("complete"):
            reply = await self._transition(
                self._lean_complete, self._complete, self._keys(run_id, tool_call_id), args
            )
        return bool(reply == 1)

    async def fail(
        self, run_id: str, tool_call_id: str, *, token: str, query_sha256: str, error_code: str
    ) -> bool:
        """Write FAILED with the error code; False if the entry is READY or claimed by another."""
        args = [
            *_head(run_id, tool_call_id, token, query_sha256),
            error_code,
            self._ttl_ms,
            _score(),
        ]
        with _store_errors("fail"):
            reply = await self._transition(
                self._lean_fail, self._fail, self._keys(run_id, tool_call_id), args
            )
        return bool(reply == 1)

    async def get(self, run_id: str, tool_call_id: str) -> LedgerEntry | None:
        """The entry, or None when unknown or expired."""
        key = entry_key(run_id, tool_call_id)
        with _store_errors("read"):
            await self._ready()
            fields = await cast(Any, self._client.hgetall(key))
        return entry_of(fields) if fields else None

    async def list_run(
        self, run_id: str, *, after: str | None, limit: int, with_bodies: bool
    ) -> RunPage:
        """Up to `limit` live entries after `after`, in first-write order; one index read
        plus one pipelined read of just the listed entries (bodies only `with_bodies`)."""
        with _store_errors("read"):
            await self._ready()
            members = await self._page(keys=[run_index_key(run_id)], args=[after or "", limit])
            if members is None:
                raise NotFound("cursor is not an entry of this run", details={"cursor": after})
            page = [m.decode("utf-8") for m in cast(list[bytes], members)]
            listed = page[:limit]
            async with self._client.pipeline(transaction=False) as pipe:
                for call_id in listed:
                    key = entry_key(run_id, call_id)
                    if with_bodies:
                        pipe.hgetall(key)
                    else:
                        pipe.hmget(key, SUMMARY_FIELDS)
                replies: list[Any] = await pipe.execute() if listed else []
        rows = replies if with_bodies else [fields_of(SUMMARY_FIELDS, r) for r in replies]
        # Index members outlive entries that expired earlier; those are simply skipped.
        return RunPage(
            entries=tuple(entry_of(fields) for fields in rows if fields),
            next_cursor=listed[-1] if len(page) > limit else None,
        )

    async def ping(self) -> None:
        """PING the server (for /readyz)."""
        with _store_errors("ping"):
            await self._ready()
            await cast(Any, self._client.ping())

    async def get_many(self, run_id: str, tool_call_ids: Sequence[str]) -> dict[str, LedgerEntry]:
        """The entries of these calls, by tool_call_id: one pipelined round trip.

        A run's keys share one hash tag, so on a Redis Cluster the whole pipeline goes to the
        one node that owns the run's slot.
        """
        ids = list(dict.fromkeys(tool_call_ids))
        if not ids:
            return {}
        with _store_errors("read"):
            await self._ready()
            async with self._client.pipeline(transaction=False) as pipe:
                for tool_call_id in ids:
                    pipe.hmget(entry_key(run_id, tool_call_id), SERVED_FIELDS)
                replies: list[list[bytes | None]] = await pipe.execute()
        found: dict[str, LedgerEntry] = {}
        for tool_call_id, values in zip(ids, replies, strict=True):
            fields = {
                name: value
                for name, value in zip(SERVED_FIELDS, values, strict=True)
                if value is not None
            }
            if fields:
                found[tool_call_id] = entry_of(fields)
        return found

    async def _transition(
        self,
        lean_script: Script,
        script: AsyncScript,
        keys: list[str],
        args: list[EncodableT],
    ) -> Any:
        if self._lean is not None:
            return await self._lean.run(lean_script, keys, cast(list[str | bytes | int], args))
        await self._ready()
        return await script(keys=keys, args=args)

    async def _ready(self) -> None:
        if self._cluster_ready:
            return
        async with self._init_lock:
            if not self._cluster_ready:
                await cast(aioredis.RedisCluster, self._client).initialize()
                self._cluster_ready = True

    @staticmethod
    def _keys(run_id: str, tool_call_id: str) -> list[str]:
        return [entry_key(run_id, tool_call_id), run_index_key(run_id)]


@contextmanager
def _store_errors(operation: str) -> Iterator[None]:
    """Any failure to reach or use the store is LedgerUnavailable (fail closed), except a pool
    that ran dry: that is this service's own limit, so Overloaded."""
    try:
        yield
    except (RedisError, OSError) as exc:
        if _pool_ran_dry(exc):
            raise Overloaded(
                "every connection to the ledger is in use; this service is at its limit",
                details={"pool": "ledger"},
            ) from exc
        # The message names the failure, never the URL (it may carry a password).
        raise LedgerUnavailable(
            f"ledger {operation} failed: {type(exc).__name__}",
            details={"operation": operation},
        ) from exc


def _pool_ran_dry(exc: BaseException) -> bool:
    """BlockingConnectionPool's or the lean client's wait timed out, or a cluster node's pool is
    at its bound."""
    if isinstance(exc, MaxConnectionsError):
        return True
    return isinstance(exc, RedisConnectionError) and isinstance(exc.__cause__, TimeoutError)


def _head(run_id: str, tool_call_id: str, token: str, query_sha256: str) -> list[EncodableT]:
    """ARGV[1..6], common to every transition script."""
    return [run_id, tool_call_id, TOOL_NAME, token, query_sha256, utc_now_iso()]


def _score() -> int:
    return time.time_ns() // 1_000_000


__all__ = ["CONNECT_TIMEOUT_S", "SOCKET_TIMEOUT_S", "RedisLedger", "entry_key", "run_index_key"]
