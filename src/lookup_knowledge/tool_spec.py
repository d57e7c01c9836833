"""The tool definition models see: one description, one input and one output schema.

See docs/integration.md#tool-definitions. Every integration renders from here — the MCP
server (`lookup_knowledge.mcp_server`), `lookup-knowledge tool-spec` and the examples — so the
model-facing text cannot drift between them.

`run_id` and `tool_call_id` are deliberately absent from the input schema: they belong to the
agent runtime (its run, and the id it gave the tool call), never to the model.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from lookup_knowledge.domain.errors import InvalidRequest

TOOL_NAME = "lookup_knowledge"
TOOL_TITLE = "Look up knowledge-base evidence"
DEFAULT_MAX_QUERY_CHARS = 4000
CATEGORIES_URI = "lookup-knowledge://categories"

DESCRIPTION = """\
Search the governed knowledge base and get evidence you can cite.

Returns one JSON object:
- evidence_status: EVIDENCE_FOUND, or NO_EVIDENCE when this search found nothing usable.
- evidence: the items in rank order (first is best); each has document_id and excerpt, and \
source, title and breadcrumb when known. Absent when there is no evidence.
- returned_count: how many items there are.
- relevance_level: PRECISE (the top item matches the question closely) or REFERENCE \
(related material: check that it really answers before relying on it). Absent without evidence.
- truncated: true when you were shown less than was selected (an excerpt, the item list or the \
query echo was cut). Treat the evidence as partial; a narrower query shows more of it.

Cite an item by its document_id, copied exactly: it is the citation coordinate a verifier \
checks against what this call returned. Cite only document_ids that this tool returned.

On NO_EVIDENCE: the knowledge base had nothing for this search — that does not mean the \
problem does not exist. Rephrase the query or drop the filters and try once more; if there is \
still nothing, say that the knowledge base has no evidence on it instead of presenting an answer \
from memory as sourced."""

# What an MCP host may put in the model's instructions: short, the tool description says the rest.
SERVER_INSTRUCTIONS = (
    "Use lookup_knowledge for questions the knowledge base can answer, and cite the "
    "document_id of each item you rely on. NO_EVIDENCE means the knowledge base had nothing: "
    "say so rather than answering from memory as if sourced."
)

QUERY_DESCRIPTION = (
    "The question or symptom in natural language, in any language, e.g. "
    "'gateway returns 504 after deploy'. One topic per call."
)
FILTERS_DESCRIPTION = (
    'Optional exact-match metadata filters, e.g. {"category": "gateway"}. Use only '
    f"categories the server lists ({CATEGORIES_URI}); leave out when unsure."
)

Format = Literal["openai", "anthropic", "mcp", "json-schema"]
FORMATS: tuple[Format, ...] = ("openai", "anthropic", "mcp", "json-schema")
JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
_ARGUMENTS = ("query", "filters")


def input_schema(*, max_query_chars: int = DEFAULT_MAX_QUERY_CHARS) -> dict[str, Any]:
    """The arguments the model fills in: `query` and optional `filters`, nothing else."""
    return {
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "minLength": 1,
                "maxLength": max_query_chars,
                "description": QUERY_DESCRIPTION,
            },
            "filters": {
                "type": "object",
                "additionalProperties": {"type": "string"},
                "description": FILTERS_DESCRIPTION,
            },
        },
        "required": ["query"],
        "additionalProperties": False,
    }


def output_schema() -> dict[str, Any]:
    """`RagToolResult` (docs/agent-contract.md#keys) as a self-contained JSON Schema."""
    text = {"type": "string"}
    item = {
        "type": "object",
        "properties": {
            "document_id": {"type": "string", "minLength": 1},
            "source": text,
            "title": text,
            "breadcrumb": text,
            "excerpt": {"type": "string", "minLength": 1},
        },
        "required": ["document_id", "excerpt"],
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {
            "evidence_status": {"enum": ["EVIDENCE_FOUND", "NO_EVIDENCE"]},
            "tool_call_id": text,
            "query": text,
            "evidence": {"type": "array", "items": item, "minItems": 1},
            "returned_count": {"type": "integer", "minimum": 0},
            "relevance_level": {"enum": ["PRECISE", "REFERENCE"]},
            "truncated": {"type": "boolean"},
        },
        "required": ["evidence_status", "tool_call_id", "query", "returned_count", "truncated"],
        "additionalProperties": False,
    }


def render(fmt: Format, *, max_query_chars: int = DEFAULT_MAX_QUERY_CHARS) -> dict[str, Any]:
    """The tool definition in one wire format."""
    parameters = input_schema(max_query_chars=max_query_chars)
    if fmt == "openai":
        # Chat Completions function tool. Not `strict`: strict mode cannot express an optional
        # string-to-string map such as `filters`.
        return {
            "type": "function",
            "function": {"name": TOOL_NAME, "description": DESCRIPTION, "parameters": parameters},
        }
    if fmt == "anthropic":
        return {"name": TOOL_NAME, "description": DESCRIPTION, "input_schema": parameters}
    if fmt == "mcp":
        return {
            "name": TOOL_NAME,
            "title": TOOL_TITLE,
            "description": DESCRIPTION,
            "inputSchema": parameters,
            "outputSchema": output_schema(),
            # Reads the knowledge base only; the ledger and audit records are bookkeeping.
            "annotations": {"title": TOOL_TITLE, "readOnlyHint": True, "openWorldHint": False},
        }
    if fmt == "json-schema":
        return {
            "$schema": JSON_SCHEMA_DIALECT,
            "title": TOOL_NAME,
            "description": DESCRIPTION,
            **parameters,
            "$defs": {"RagToolResult": output_schema()},
        }
    raise ValueError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")


def parse_arguments(
    arguments: Mapping[str, Any] | None, *, max_query_chars: int | None
) -> tuple[str, dict[str, str] | None]:
    """`query` (trimmed, 1..max_query_chars) and optional `filters`; anything else is refused.

    Raises InvalidRequest naming the field (`details.field`). `max_query_chars=None` leaves the
    length to the service (a client does not know the server's bound).
    """
    arguments = arguments or {}
    if not isinstance(arguments, Mapping):
        raise InvalidRequest("the arguments must be an object", details={"field": "arguments"})
    for name in arguments:
        if name not in _ARGUMENTS:
            raise InvalidRequest(
                f"unexpected argument {name!r}: only query and filters are accepted "
                "(run_id and tool_call_id come from the runtime, not the model)",
                details={"field": name, "allowed": list(_ARGUMENTS)},
            )
    raw_query = arguments.get("query")
    if not isinstance(raw_query, str):
        problem = "is required" if raw_query is None else "must be a string"
        raise InvalidRequest(f"query {problem}", details={"field": "query"})
    query = raw_query.strip()
    if not query or (max_query_chars is not None and len(query) > max_query_chars):
        raise InvalidRequest(
            f"query must be 1..{max_query_chars or 'MAX_QUERY_CHARS'} characters after trimming",
            details={"field": "query", "length": len(query), "max_length": max_query_chars},
        )
    raw_filters = arguments.get("filters")
    if raw_filters is None:
        return query, None
    if not isinstance(raw_filters, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in raw_filters.items()
    ):
        raise InvalidRequest(
            "filters must be an object of string to string", details={"field": "filters"}
        )
    return query, dict(raw_filters) or None


def main(argv: Sequence[str] | None = None) -> int:
    """`lookup-knowledge tool-spec --format ...`: print the definition as JSON."""
    parser = argparse.ArgumentParser(
        prog="lookup-knowledge tool-spec",
        description="Print the lookup_knowledge tool definition for a model API or MCP host.",
    )
    parser.add_argument(
        "--format",
        choices=(*FORMATS, "report-schema"),
        default="json-schema",
        help="a tool definition, or report-schema: the JSON Schema of the report the guard "
        "verifies (docs/guard.md#report), for the agent's prompt",
    )
    parser.add_argument(
        "--max-query-chars",
        type=int,
        default=None,
        help="the query bound to advertise (default: MAX_QUERY_CHARS from the environment)",
    )
    args = parser.parse_args(argv)
    if args.format == "report-schema":
        from lookup_knowledge.guard.schema import report_schema_text

        sys.stdout.write(report_schema_text())
        return 0
    max_query_chars = args.max_query_chars
    if max_query_chars is None:
        from lookup_knowledge.cli import _settings_or_exit

        max_query_chars = _settings_or_exit(bind=False).max_query_chars
    spec = render(args.format, max_query_chars=max_query_chars)
    sys.stdout.write(json.dumps(spec, ensure_ascii=False, indent=2) + "\n")
    return 0
