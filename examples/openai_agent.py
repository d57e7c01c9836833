"""An OpenAI function-calling loop whose knowledge comes from lookup_knowledge."""

from lookup_knowledge.client import AsyncLookupClient
from lookup_knowledge.tool_spec import render

TOOLS = [render("openai")]


async def answer(openai, lk: AsyncLookupClient, question: str, *, run_id: str) -> str:
    """`openai` is an `openai.AsyncOpenAI()`; every tool call is ledgered under `run_id`."""
    messages: list[dict] = [{"role": "user", "content": question}]
    for _ in range(8):
        completion = await openai.chat.completions.create(
            model="gpt-4.1", messages=messages, tools=TOOLS
        )
        message = completion.choices[0].message
        if not message.tool_calls:
            return message.content or ""
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            # The model's call id is the ledger's tool_call_id: citations stay checkable.
            output = await lk.call_tool(
                call.function.arguments, run_id=run_id, tool_call_id=call.id
            )
            messages.append({"role": "tool", "tool_call_id": call.id, "content": output.text})
    raise RuntimeError("no final answer after 8 turns")
