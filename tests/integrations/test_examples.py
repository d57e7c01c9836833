"""The files under examples/ run against the real app, with scripted fake model clients.

The fakes answer real SDK objects (`openai.types.chat.ChatCompletion`,
`anthropic.types.Message`) built from wire JSON, and check every request the example sends
against the SDKs' request types, so the loops work with the real SDKs without a network call.
The model's final answer cites what the tool returned; the guard's verifier then checks that
citation against the ledger, which is the whole point of the ids the examples pass.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import sys
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

from anthropic.types import Message, MessageParam, ToolParam
from openai.types.chat import (
    ChatCompletion,
    ChatCompletionFunctionToolParam,
    ChatCompletionMessageParam,
)
from pydantic import TypeAdapter

from lookup_knowledge.client import AsyncLookupClient
from lookup_knowledge.guard import CitationKind, verify_citation
from support import OpenClient

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
QUESTION = "网关超时怎么排查"


def load_example(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@asynccontextmanager
async def lookup_client(open_client: OpenClient) -> AsyncIterator[AsyncLookupClient]:
    async with open_client(pyrag_base_url=None, lookup_api_tokens="agent") as http:
        yield AsyncLookupClient(http_client=http, token="agent")


def first_document_id(tool_text: str) -> str:
    document_id: str = json.loads(tool_text)["evidence"][0]["document_id"]
    return document_id


class FakeOpenAI:
    """`openai.AsyncOpenAI` as far as the example uses it: `chat.completions.create`."""

    def __init__(self, turns: list[Callable[[dict[str, Any]], dict[str, Any]]]) -> None:
        self.chat = SimpleNamespace(completions=self)
        self.requests: list[dict[str, Any]] = []
        self._turns = turns

    async def create(self, **request: Any) -> ChatCompletion:
        TypeAdapter(list[ChatCompletionMessageParam]).validate_python(request["messages"])
        TypeAdapter(list[ChatCompletionFunctionToolParam]).validate_python(request["tools"])
        self.requests.append(copy.deepcopy(request))
        message = self._turns.pop(0)(request)
        return ChatCompletion.model_validate(
            {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "created": 0,
                "model": request["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", **message},
                        "finish_reason": "tool_calls" if "tool_calls" in message else "stop",
                    }
                ],
            }
        )


async def test_the_openai_loop_answers_with_a_citation_the_ledger_proves(
    open_client: OpenClient,
) -> None:
    example = load_example("openai_agent")
    run_id = f"run-{uuid.uuid4().hex[:8]}"
    call = {"query": QUESTION, "filters": {"category": "gateway"}}

    def ask(_: dict[str, Any]) -> dict[str, Any]:
        function = {"name": "lookup_knowledge", "arguments": json.dumps(call)}
        return {
            "content": None,
            "tool_calls": [{"id": "call_1", "type": "function", "function": function}],
        }

    def conclude(request: dict[str, Any]) -> dict[str, Any]:
        tool_message = request["messages"][-1]
        assert tool_message["role"] == "tool" and tool_message["tool_call_id"] == "call_1"
        return {
            "content": f"Raise the upstream timeout [{first_document_id(tool_message['content'])}]"
        }

    model = FakeOpenAI([ask, conclude])
    async with lookup_client(open_client) as lk:
        final = await example.answer(model, lk, QUESTION, run_id=run_id)
        entry = await lk.ledger_entry(run_id, "call_1")
    cited = final.split("[")[1].rstrip("]")
    assert (
        verify_citation(
            entry.raw,
            run_id=run_id,
            kind=CitationKind.NORMAL,
            document_id=cited,
            tool_call_id="call_1",
        )
        == []
    )
    assert model.requests[0]["tools"] == example.TOOLS
    assert len(model.requests) == 2


class FakeAnthropic:
    """`anthropic.AsyncAnthropic` as far as the example uses it: `messages.create`."""

    def __init__(self, turns: list[Callable[[dict[str, Any]], list[dict[str, Any]]]]) -> None:
        self.messages = self
        self.requests: list[dict[str, Any]] = []
        self._turns = turns

    async def create(self, **request: Any) -> Message:
        TypeAdapter(list[MessageParam]).validate_python(request["messages"])
        TypeAdapter(list[ToolParam]).validate_python(request["tools"])
        self.requests.append(copy.deepcopy(request))
        content = self._turns.pop(0)(request)
        uses_tool = any(block["type"] == "tool_use" for block in content)
        return Message.model_validate(
            {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": request["model"],
                "content": content,
                "stop_reason": "tool_use" if uses_tool else "end_turn",
                "stop_sequence": None,
                "usage": {"input_tokens": 1, "output_tokens": 1},
            }
        )


async def test_the_anthropic_loop_answers_with_a_citation_and_sees_errors_as_tool_errors(
    open_client: OpenClient,
) -> None:
    example = load_example("anthropic_agent")
    run_id = f"run-{uuid.uuid4().hex[:8]}"

    def ask(_: dict[str, Any]) -> list[dict[str, Any]]:
        return [
            {"type": "text", "text": "Let me look that up."},
            {
                "type": "tool_use",
                "id": "toolu_01",
                "name": "lookup_knowledge",
                "input": {"query": QUESTION},
            },
            {
                "type": "tool_use",
                "id": "toolu_02",
                "name": "lookup_knowledge",
                "input": {"q": "typo"},
            },
        ]

    seen: dict[str, Any] = {}

    def conclude(request: dict[str, Any]) -> list[dict[str, Any]]:
        results = request["messages"][-1]["content"]
        seen.update({r["tool_use_id"]: r for r in results})
        cited = first_document_id(seen["toolu_01"]["content"])
        return [{"type": "text", "text": f"Raise the upstream timeout [{cited}]"}]

    model = FakeAnthropic([ask, conclude])
    async with lookup_client(open_client) as lk:
        final = await example.answer(model, lk, QUESTION, run_id=run_id)
        entry = await lk.ledger_entry(run_id, "toolu_01")
        listing = await lk.run_ledger(run_id)
    cited = final.split("[")[1].rstrip("]")
    assert (
        verify_citation(
            entry.raw,
            run_id=run_id,
            kind=CitationKind.NORMAL,
            document_id=cited,
            tool_call_id="toolu_01",
        )
        == []
    )
    assert seen["toolu_01"]["is_error"] is False
    assert seen["toolu_02"]["is_error"] is True
    assert json.loads(seen["toolu_02"]["content"])["error"]["details"]["field"] == "q"
    assert [e.tool_call_id for e in listing.entries] == ["toolu_01"]  # the bad call left nothing


async def test_the_langchain_tool_answers_the_ledgered_bytes(open_client: OpenClient) -> None:
    example = load_example("langchain_tool")
    async with lookup_client(open_client) as lk:
        tool = example.lookup_tool(lk, run_id="run-lc")
        text = await tool.ainvoke({"query": QUESTION})
        listing = await lk.run_ledger("run-lc")
        entry = await lk.ledger_entry("run-lc", listing.entries[0].tool_call_id)
    assert tool.name == "lookup_knowledge"
    assert json.loads(text)["evidence_status"] == "EVIDENCE_FOUND"
    assert text.encode() in entry.raw  # the ledger embeds the answer byte for byte


async def test_the_llamaindex_tool_answers_the_ledgered_bytes(open_client: OpenClient) -> None:
    example = load_example("llamaindex_tool")
    async with lookup_client(open_client) as lk:
        tool = example.lookup_tool(lk, run_id="run-li")
        output = await tool.acall(query=QUESTION)
        listing = await lk.run_ledger("run-li")
    assert json.loads(str(output.content))["evidence_status"] == "EVIDENCE_FOUND"
    assert len(listing.entries) == 1
