"""lookup_knowledge as a LangChain tool (an example: langchain-core is not a dependency)."""

from langchain_core.tools import StructuredTool

from lookup_knowledge.client import AsyncLookupClient
from lookup_knowledge.tool_spec import DESCRIPTION, TOOL_NAME, input_schema


def lookup_tool(lk: AsyncLookupClient, *, run_id: str) -> StructuredTool:
    """A tool whose result is the exact ledgered answer (or the error envelope)."""

    async def lookup_knowledge(query: str, filters: dict[str, str] | None = None) -> str:
        arguments = {"query": query, "filters": filters}
        output = await lk.call_tool(arguments, run_id=run_id, tool_call_id=new_call_id())
        return output.text

    return StructuredTool.from_function(
        coroutine=lookup_knowledge,
        name=TOOL_NAME,
        description=DESCRIPTION,
        args_schema=input_schema(),
    )


def new_call_id() -> str:
    # LangChain does not hand the model's call id to the function; the runtime mints one.
    import uuid

    return "lc-" + uuid.uuid4().hex
