"""`AsyncLookupClient` and `LookupClient`: the same calls over httpx, async and sync."""

from __future__ import annotations

import time
from collections.abc import Mapping
from types import TracebackType
from typing import Any, Self, TypeVar

import anyio
import httpx

from lookup_knowledge.client._calls import (
    Call,
    entry_call,
    error_output,
    lookup_call,
    run_call,
    tool_arguments,
    verify_call,
)
from lookup_knowledge.client.errors import (
    LookupKnowledgeClientError,
    TransportError,
    error_from_response,
)
from lookup_knowledge.client.models import LedgerEntry, LookupResponse, RunLedger, ToolOutput
from lookup_knowledge.client.retry import RetryPolicy
from lookup_knowledge.guard.report import GuardReport, VerifyResult

T = TypeVar("T")
DEFAULT_TIMEOUT_S = 30.0  # above the service's own py-rag bound, so its 504 arrives first


class _Base:
    def __init__(self, token: str | None, ledger_token: str | None, retry: RetryPolicy) -> None:
        self._token = token
        self._ledger_token = ledger_token if ledger_token is not None else token
        self.retry = retry

    def _headers(self, call: Call[Any]) -> dict[str, str]:
        token = self._ledger_token if call.ledger_role else self._token
        return {"Authorization": f"Bearer {token}"} if token else {}

    def _error(
        self, call: Call[Any], response: httpx.Response | None, exc: Exception | None
    ) -> LookupKnowledgeClientError:
        if response is not None:
            return error_from_response(response)
        error = TransportError(f"{call.method} {call.path}: {exc!r}")
        error.__cause__ = exc
        return error


class AsyncLookupClient(_Base):
    """Async client; `async with AsyncLookupClient(url, token=...) as lk: await lk.lookup(...)`."""

    def __init__(
        self,
        base_url: str = "http://127.0.0.1:8080",
        *,
        token: str | None = None,
        ledger_token: str | None = None,
        retry: RetryPolicy | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        super().__init__(token, ledger_token, retry or RetryPolicy())
        self._owns_http = http_client is None
        self._http = http_client or httpx.AsyncClient(base_url=base_url, timeout=timeout)

    async def lookup(
        self,
        query: str,
        *,
        run_id: str,
        tool_call_id: str | None = None,
        filters: Mapping[str, str] | None = None,
        step_id: str | None = None,
    ) -> LookupResponse:
        """Evidence for `query`, ledgered under `(run_id, tool_call_id)` (generated if None)."""
        call = lookup_call(
            query, run_id=run_id, tool_call_id=tool_call_id, filters=filters, step_id=step_id
        )
        return await self._send(call)

    async def call_tool(
        self, arguments: str | Mapping[str, Any] | None, *, run_id: str, tool_call_id: str
    ) -> ToolOutput:
        """Answer a model's tool call: its arguments as sent (JSON text or object) → the text
        to hand back. Failures the model can act on (bad arguments, the service unable to
        answer) come back as `is_error` envelopes; auth and transport failures raise."""
        try:
            query, filters = tool_arguments(arguments)
            response = await self.lookup(
                query, run_id=run_id, tool_call_id=tool_call_id, filters=filters
            )
        except Exception as exc:
            output = error_output(exc)
            if output is None:
                raise
            return output
        return ToolOutput(text=response.body.decode("utf-8"), is_error=False, response=response)

    async def verify_report(
        self, report: GuardReport | Mapping[str, Any], *, run_id: str
    ) -> VerifyResult:
        """The guard's verdict on an agent's report against the ledger of `run_id`."""
        return await self._send(verify_call(report, run_id=run_id))

    async def ledger_entry(self, run_id: str, tool_call_id: str) -> LedgerEntry:
        return await self._send(entry_call(run_id, tool_call_id))

    async def run_ledger(
        self, run_id: str, *, cursor: str | None = None, limit: int | None = None
    ) -> RunLedger:
        return await self._send(run_call(run_id, cursor=cursor, limit=limit))

    async def _send(self, call: Call[T]) -> T:
        attempt = 0
        while True:
            attempt += 1
            response: httpx.Response | None = None
            failure: Exception | None = None
            try:
                response = await self._http.request(
                    call.method,
                    call.path,
                    json=call.json,
                    params=call.params,
                    headers=self._headers(call),
                )
            except httpx.TransportError as exc:
                failure = exc
            if response is not None and response.is_success:
                return call.parse(response, attempt)
            error = self._error(call, response, failure)
            delay = self.retry.delay(attempt, error)
            if delay is None:
                raise error
            await anyio.sleep(delay)

    async def aclose(self) -> None:
        if self._owns_http:
            await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


class LookupClient(_Base):
    """Sync client; `with LookupClient(url, token=...) as lk: lk.lookup(...)`."""

    def __init__(
        self,
        base_url: str = "http://127.0.0.1:8080",
        *,
        token: str | None = None,
        ledger_token: str | None = None,
        retry: RetryPolicy | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
        http_client: httpx.Client | None = None,
    ) -> None:
        super().__init__(token, ledger_token, retry or RetryPolicy())
        self._owns_http = http_client is None
        self._http = http_client or httpx.Client(base_url=base_url, timeout=timeout)

    def lookup(
        self,
        query: str,
        *,
        run_id: str,
        tool_call_id: str | None = None,
        filters: Mapping[str, str] | None = None,
        step_id: str | None = None,
    ) -> LookupResponse:
        """Evidence for `query`, ledgered under `(run_id, tool_call_id)` (generated if None)."""
        call = lookup_call(
            query, run_id=run_id, tool_call_id=tool_call_id, filters=filters, step_id=step_id
        )
        return self._send(call)

    def call_tool(
        self, arguments: str | Mapping[str, Any] | None, *, run_id: str, tool_call_id: str
    ) -> ToolOutput:
        """Answer a model's tool call: its arguments as sent (JSON text or object) → the text
        to hand back. Failures the model can act on (bad arguments, the service unable to
        answer) come back as `is_error` envelopes; auth and transport failures raise."""
        try:
            query, filters = tool_arguments(arguments)
            response = self.lookup(query, run_id=run_id, tool_call_id=tool_call_id, filters=filters)
        except Exception as exc:
            output = error_output(exc)
            if output is None:
                raise
            return output
        return ToolOutput(text=response.body.decode("utf-8"), is_error=False, response=response)

    def verify_report(
        self, report: GuardReport | Mapping[str, Any], *, run_id: str
    ) -> VerifyResult:
        """The guard's verdict on an agent's report against the ledger of `run_id`."""
        return self._send(verify_call(report, run_id=run_id))

    def ledger_entry(self, run_id: str, tool_call_id: str) -> LedgerEntry:
        return self._send(entry_call(run_id, tool_call_id))

    def run_ledger(
        self, run_id: str, *, cursor: str | None = None, limit: int | None = None
    ) -> RunLedger:
        return self._send(run_call(run_id, cursor=cursor, limit=limit))

    def _send(self, call: Call[T]) -> T:
        attempt = 0
        while True:
            attempt += 1
            response: httpx.Response | None = None
            failure: Exception | None = None
            try:
                response = self._http.request(
                    call.method,
                    call.path,
                    json=call.json,
                    params=call.params,
                    headers=self._headers(call),
                )
            except httpx.TransportError as exc:
                failure = exc
            if response is not None and response.is_success:
                return call.parse(response, attempt)
            error = self._error(call, response, failure)
            delay = self.retry.delay(attempt, error)
            if delay is None:
                raise error
            time.sleep(delay)

    def close(self) -> None:
        if self._owns_http:
            self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
