"""An Anthropic tool_use loop whose knowledge comes from lookup_knowledge."""

from lookup_knowledge.client import AsyncLookupClient
from lookup_knowledge.tool_spec import render

TOOLS = [render("anthropic")]


async def answer(anthropic, lk: AsyncLookupClient, question: str, *, run_id: str) -> str:
    """`anthropic` is an `anthropic.AsyncAnthropic()`; each tool call is ledgered in `run_id`."""
    messages: list[dict] = [{"role": "user", "content": question}]
    for _ in range(8):
        reply = await anthropic.messages.create(
            model="claude-sonnet-4-5", max_tokens=1024, tools=TOOLS, messages=messages
        )
        if reply.stop_reason != "tool_use":
            return "".join(block.text for block in reply.content if block.type == "text")
        messages.append(
            {
                "role": "assistant",
                "content": [b.model_dump(exclude_none=True) for b in reply.content],
            }
        )
        results = []
        for block in reply.content:
            if block.type == "tool_use":
                # The tool_use id is the ledger's tool_call_id: citations stay checkable.
                output = await lk.call_tool(block.input, run_id=run_id, tool_call_id=block.id)
                results.append(
                    {
                        "type": "tool_result",
                        "tool_use_id": block.id,
                        "content": output.text,
                        "is_error": output.is_error,
                    }
                )
        messages.append({"role": "user", "content": results})
    raise RuntimeError("no final answer after 8 turns")
