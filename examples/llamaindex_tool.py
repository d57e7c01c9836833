"""lookup_knowledge as a LlamaIndex tool (an example: llama-index-core is not a dependency)."""

import uuid

from llama_index.core.tools import FunctionTool

from lookup_knowledge.client import AsyncLookupClient
from lookup_knowledge.tool_spec import DESCRIPTION, TOOL_NAME


def lookup_tool(lk: AsyncLookupClient, *, run_id: str) -> FunctionTool:
    """A tool whose result is the exact ledgered answer (or the error envelope)."""

    async def lookup_knowledge(query: str, filters: dict[str, str] | None = None) -> str:
        arguments = {"query": query, "filters": filters}
        tool_call_id = "li-" + uuid.uuid4().hex
        output = await lk.call_tool(arguments, run_id=run_id, tool_call_id=tool_call_id)
        return output.text

    return FunctionTool.from_defaults(
        async_fn=lookup_knowledge, name=TOOL_NAME, description=DESCRIPTION
    )
