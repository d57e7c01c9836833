"""Recorded py-rag answers: one file per golden case, replayed over an httpx transport.

A fixture keeps the request the adapter sent next to the answer it got, so a replay can tell
a stale fixture (the case's query, top_k, mode or filters changed since the recording) from a
regression. Nothing in a fixture depends on the clock: re-recording an unchanged engine
rewrites identical files.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
from pydantic import BaseModel, ConfigDict, ValidationError


class FixtureError(RuntimeError):
    """A fixture is missing, unreadable, or no longer matches its case (re-record it)."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class RecordedRequest(_Frozen):
    method: str
    path: str
    body: Any = None  # the JSON the adapter sent


class RecordedResponse(_Frozen):
    status: int
    body: Any = None  # the answer, when it was JSON
    text: str | None = None  # the answer as text, when it was not

    def content(self) -> bytes:
        if self.text is not None:
            return self.text.encode()
        return json.dumps(self.body, ensure_ascii=False).encode()


class Fixture(_Frozen):
    case_id: str
    recorded_from: str
    request: RecordedRequest
    response: RecordedResponse


def fixture_path(directory: Path, case_id: str) -> Path:
    return directory / f"{case_id}.json"


def load_fixture(directory: Path, case_id: str) -> Fixture:
    path = fixture_path(directory, case_id)
    try:
        fixture = Fixture.model_validate_json(path.read_bytes())
    except FileNotFoundError:
        raise FixtureError(
            f"no fixture {path.name}: run `lookup-knowledge eval --record`"
        ) from None
    except (OSError, ValidationError) as exc:
        raise FixtureError(f"fixture {path.name} is unreadable: {exc}") from exc
    if fixture.case_id != case_id:
        raise FixtureError(f"fixture {path.name} was recorded for case {fixture.case_id!r}")
    return fixture


def save_fixture(directory: Path, fixture: Fixture) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = fixture_path(directory, fixture.case_id)
    text = json.dumps(fixture.model_dump(mode="json"), ensure_ascii=False, indent=2)
    path.write_text(text + "\n", encoding="utf-8")
    return path


def replay_transport(
    response: RecordedResponse, *, expected: RecordedRequest | None = None
) -> httpx.MockTransport:
    """Answer every request with the recorded response; with `expected`, only a request whose
    JSON body equals the recorded one (else the fixture is stale and FixtureError is raised)."""

    def handle(request: httpx.Request) -> httpx.Response:
        if expected is not None:
            sent = recorded_request(request)
            if sent.method != expected.method or sent.body != expected.body:
                raise FixtureError(
                    f"stale fixture: it answers {expected.body!r}, the adapter sent "
                    f"{sent.body!r}; run `lookup-knowledge eval --record`"
                )
        return httpx.Response(
            response.status,
            content=response.content(),
            headers={"content-type": "application/json" if response.text is None else "text/plain"},
        )

    return httpx.MockTransport(handle)


class RecordingTransport(httpx.AsyncBaseTransport):
    """Pass requests to a real transport and keep the last exchange for a fixture."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self._inner = inner
        self._last: tuple[RecordedRequest, RecordedResponse] | None = None

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        answer = await self._inner.handle_async_request(request)
        try:
            content = await answer.aread()
        finally:
            await answer.aclose()
        self._last = (recorded_request(request), recorded_response(answer.status_code, content))
        content_type = answer.headers.get("content-type", "application/json")
        return httpx.Response(
            answer.status_code, content=content, headers={"content-type": content_type}
        )

    def take(self) -> tuple[RecordedRequest, RecordedResponse]:
        """The last exchange, once; a case that sent nothing has nothing to record."""
        if self._last is None:
            raise FixtureError("py-rag gave no answer to record (unreachable or too slow)")
        exchange, self._last = self._last, None
        return exchange

    async def aclose(self) -> None:
        await self._inner.aclose()


def recorded_request(request: httpx.Request) -> RecordedRequest:
    content = request.content
    return RecordedRequest(
        method=request.method, path=request.url.path, body=json.loads(content) if content else None
    )


def recorded_response(status: int, content: bytes) -> RecordedResponse:
    try:
        return RecordedResponse(status=status, body=json.loads(content))
    except ValueError:
        return RecordedResponse(status=status, text=content.decode("utf-8", errors="replace"))
