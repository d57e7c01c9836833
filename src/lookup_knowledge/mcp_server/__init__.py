"""The MCP face of the service: one tool, `lookup_knowledge`, and a categories resource.

See docs/integration.md#mcp for how hosts use it.

Built on the official `mcp` SDK (2.x), its low-level `Server`, not on fastmcp:

* fastmcp is a layer over this same SDK (it depends on it) and brings about thirty more
  packages (OAuth providers, a CLI framework, rich, websockets, OpenAPI importers) for
  features this one-tool server does not use.
* The SDK's high-level `MCPServer` (formerly FastMCP) derives schemas from a function
  signature and re-serializes what the function returns (indented JSON); errors become a
  bare message. The contract needs the opposite: the exact ledgered bytes as the text
  content, a hand-kept `outputSchema` (docs/agent-contract.md#keys), and errors that carry
  the envelope's `code`. The low-level `Server` hands over exactly that control, with
  stdio and streamable HTTP from the same package.
* Auth is the service's own static bearer tokens (the lookup role) with the service's own
  envelope, a few lines in `http.py`; neither SDK's OAuth machinery is needed for that.

Ids. The model never fills in `run_id` or `tool_call_id` (`lookup_knowledge.tool_spec`). A
runtime may pass them in the request's `_meta` (`lookup-knowledge/run_id`,
`lookup-knowledge/tool_call_id`, `lookup-knowledge/step_id`), which makes a retried call a
ledger replay. Otherwise `run_id` is `MCP_RUN_ID`, else one id per stdio process, else (HTTP)
one per call; `tool_call_id` is generated. Not the JSON-RPC request id: those restart at 1 on
every connection, so two connections sharing a run would collide with 409s, and a retry gets a
new one anyway. Every result carries the ids it was ledgered under in its `_meta`.

stdio runs the service in-process (`stdio.py`): the same settings, pipeline, ledger and audit
as `lookup-knowledge serve`, so with `REDIS_URL` set its answers land in the shared ledger.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lookup_knowledge.mcp_server.server import (
        META_PREFIX,
        RUN_ID_META,
        STEP_ID_META,
        TOOL_CALL_ID_META,
        build_server,
    )

__all__ = ["META_PREFIX", "RUN_ID_META", "STEP_ID_META", "TOOL_CALL_ID_META", "build_server"]


def __getattr__(name: str) -> Any:
    """Load the SDK only when a name of it is asked for: `/mcp` in the service loads it on
    its first request (http.py), not at start."""
    if name in __all__:
        from lookup_knowledge.mcp_server import server

        return getattr(server, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
