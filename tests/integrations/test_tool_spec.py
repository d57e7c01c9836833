"""`lookup-knowledge tool-spec`: each format checked against that format's own definition.

OpenAI and Anthropic shapes are validated with their SDKs' request types, the MCP shape with
the MCP SDK's `Tool` model, and the JSON Schema with a Draft 2020-12 validator.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, get_type_hints

import jsonschema
import pytest
from anthropic.types import ToolParam
from mcp.types import Tool
from openai.types.chat import ChatCompletionFunctionToolParam
from openai.types.shared_params import FunctionDefinition
from pydantic import TypeAdapter
from referencing import Registry, Resource

from lookup_knowledge.domain.contract import RagEvidenceItem, RagToolResult
from lookup_knowledge.tool_spec import (
    DESCRIPTION,
    FORMATS,
    TOOL_NAME,
    input_schema,
    main,
    output_schema,
    render,
)
from support import OpenClient

VALIDATOR = jsonschema.Draft202012Validator


def spec_from_cli(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    assert main(list(args)) == 0
    printed: dict[str, Any] = json.loads(capsys.readouterr().out)
    return printed


def only_known_keys(data: dict[str, Any], typed_dict: Any) -> None:
    assert set(data) <= set(get_type_hints(typed_dict)), set(data) - set(get_type_hints(typed_dict))


def test_the_openai_format_is_a_chat_completions_function_tool(
    capsys: pytest.CaptureFixture[str],
) -> None:
    spec = spec_from_cli(capsys, "--format", "openai", "--max-query-chars", "4000")
    TypeAdapter(ChatCompletionFunctionToolParam).validate_python(spec)
    only_known_keys(spec, ChatCompletionFunctionToolParam)
    only_known_keys(spec["function"], FunctionDefinition)
    assert spec["function"]["name"] == TOOL_NAME
    assert spec["function"]["parameters"] == input_schema()
    VALIDATOR.check_schema(spec["function"]["parameters"])


def test_the_anthropic_format_is_a_tool_param(capsys: pytest.CaptureFixture[str]) -> None:
    spec = spec_from_cli(capsys, "--format", "anthropic", "--max-query-chars", "4000")
    TypeAdapter(ToolParam).validate_python(spec)
    only_known_keys(spec, ToolParam)
    assert spec["input_schema"]["type"] == "object"
    assert spec["description"] == DESCRIPTION


def test_the_mcp_format_round_trips_through_the_sdk_tool_model(
    capsys: pytest.CaptureFixture[str],
) -> None:
    spec = spec_from_cli(capsys, "--format", "mcp", "--max-query-chars", "4000")
    tool = Tool.model_validate(spec)
    assert tool.model_dump(by_alias=True, exclude_none=True, mode="json") == spec
    assert tool.output_schema == output_schema()
    VALIDATOR.check_schema(spec["inputSchema"])
    VALIDATOR.check_schema(spec["outputSchema"])


def test_the_json_schema_format_is_draft_2020_12_and_carries_the_result_schema(
    capsys: pytest.CaptureFixture[str],
) -> None:
    spec = spec_from_cli(capsys, "--format", "json-schema", "--max-query-chars", "4000")
    VALIDATOR.check_schema(spec)
    assert spec["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    validator = VALIDATOR(spec)
    assert validator.is_valid({"query": "网关超时", "filters": {"category": "gateway"}})
    for bad in (
        {},
        {"query": ""},
        {"query": "q", "run_id": "r"},
        {"query": "q", "filters": {"a": 1}},
    ):
        assert not validator.is_valid(bad), bad


def test_no_format_lets_the_model_fill_in_the_runtime_ids() -> None:
    parameters = {
        "openai": render("openai")["function"]["parameters"],
        "anthropic": render("anthropic")["input_schema"],
        "mcp": render("mcp")["inputSchema"],
        "json-schema": render("json-schema"),
    }
    assert set(parameters) == set(FORMATS)
    for fmt, schema in parameters.items():
        assert set(schema["properties"]) == {"query", "filters"}, fmt
        assert schema["additionalProperties"] is False, fmt


def test_the_advertised_query_bound_follows_max_query_chars(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MAX_QUERY_CHARS", "1234")
    spec = spec_from_cli(capsys, "--format", "anthropic")
    assert spec["input_schema"]["properties"]["query"]["maxLength"] == 1234


def test_the_output_schema_names_exactly_the_contract_fields() -> None:
    schema = output_schema()
    assert set(schema["properties"]) == set(RagToolResult.model_fields)
    required = {n for n, f in RagToolResult.model_fields.items() if f.is_required()}
    assert set(schema["required"]) == required
    item = schema["properties"]["evidence"]["items"]
    assert set(item["properties"]) == set(RagEvidenceItem.model_fields)
    assert set(item["required"]) == {
        n for n, f in RagEvidenceItem.model_fields.items() if f.is_required()
    }


@pytest.mark.parametrize(
    ("query", "overrides"),
    [
        ("网关超时怎么排查", {}),
        ("qwzx plorf vindle", {}),  # NO_EVIDENCE
        ("redis memory usage high", {"projection_max_excerpt_chars": 40}),  # truncated
    ],
)
async def test_real_answers_validate_against_the_output_schema(
    open_client: OpenClient, query: str, overrides: dict[str, Any]
) -> None:
    async with open_client(pyrag_base_url=None, **overrides) as client:
        body = {"run_id": "run-spec", "tool_call_id": "c1", "query": query}
        response = await client.post("/lookup_knowledge", json=body)
    assert response.status_code == 200
    answer = response.json()
    VALIDATOR(output_schema()).validate(answer)
    document = render("json-schema")
    registry: Registry[Any] = Registry().with_resource("urn:spec", Resource.from_contents(document))
    VALIDATOR({"$ref": "urn:spec#/$defs/RagToolResult"}, registry=registry).validate(answer)
    broken = {**answer, "score": 0.9}
    assert not VALIDATOR(output_schema()).is_valid(broken)


def test_report_schema_prints_the_guards_shipped_schema(capsys: pytest.CaptureFixture[str]) -> None:
    from lookup_knowledge.guard.report import GuardReport
    from lookup_knowledge.guard.schema import report_schema_text

    assert main(["--format", "report-schema"]) == 0
    printed = capsys.readouterr().out
    assert printed == report_schema_text()
    schema = json.loads(printed)
    VALIDATOR.check_schema(schema)
    report = {
        "analyses": [
            {
                "id": "a1",
                "text": "Raise the timeout.",
                "citations": [{"tool_call_id": "c1", "kind": "NORMAL", "document_id": "d#chunk-0"}],
            }
        ],
        "limitations": ["One runbook."],
    }
    assert VALIDATOR(schema).is_valid(report)
    GuardReport.model_validate(report)
    assert not VALIDATOR(schema).is_valid({**report, "extra": 1})


def test_the_command_list_names_every_format(capsys: pytest.CaptureFixture[str]) -> None:
    from lookup_knowledge.cli import main as cli_main

    with pytest.raises(SystemExit):
        cli_main(["--help"])
    listing = " ".join(capsys.readouterr().out.split())
    summary = listing.partition("tool-spec print the tool definition")[2].partition(" audit ")[0]
    for fmt in (*FORMATS, "report-schema"):
        assert fmt in summary
