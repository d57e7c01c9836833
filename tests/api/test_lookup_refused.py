"""Calls refused at the edge: bad Unicode is 422 naming the field, and every refusal leaves its
audit row (docs/audit.md, docs/errors.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import respx

from audit_support import all_rows, reader
from builders import pyrag_body
from lookup_knowledge.audit.writer import AuditWriter
from support import PYRAG_SEARCH_URL, OpenClient, RecordingAudit

LOOKUP = "/lookup_knowledge"
GOOD = {"run_id": "run-1", "tool_call_id": "call-1", "query": "网关超时"}


def raw_json(body: dict[str, Any]) -> bytes:
    """The body as JSON text with `\\udXXX` escapes kept: valid JSON, not valid Unicode."""
    import json

    return json.dumps(body, ensure_ascii=True).encode("ascii")


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"query": "a\ud800b"}, "query"),
        ({"run_id": "run-\udfff"}, "run_id"),
        ({"tool_call_id": "call\ud83d"}, "tool_call_id"),
        ({"step_id": "step\udc00"}, "step_id"),
        ({"filters": {"category": "gw\ud800"}}, "filters"),
        ({"filters": {"cat\ud800": "gw"}}, "filters"),
        ({"toolCallId": "call\ud800", "tool_call_id": None}, "toolCallId"),
    ],
)
async def test_a_lone_surrogate_anywhere_is_refused_naming_the_field_and_leaves_one_row(
    open_client: OpenClient, audit: RecordingAudit, change: dict[str, Any], field: str
) -> None:
    body = {k: v for k, v in {**GOOD, **change}.items() if v is not None}
    async with open_client(audit=audit) as client, respx.mock(assert_all_called=False) as mock:
        upstream = mock.post(PYRAG_SEARCH_URL).respond(200, json=pyrag_body([]))
        response = await client.post(
            LOOKUP, content=raw_json(body), headers={"content-type": "application/json"}
        )
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == "INVALID_REQUEST"
    [problem] = [p for p in error["details"] if p["type"] == "lone_surrogate"]
    assert problem["loc"][-1] == field
    assert not upstream.called
    [row] = audit.records
    assert (row.success, row.error_code) == (False, "INVALID_REQUEST")
    for text in (row.run_id, row.tool_call_id, row.query, row.step_id or ""):
        text.encode("utf-8")  # escaped: valid text
    assert row.retrieval_details["problems"][0]["type"] == "lone_surrogate"


async def test_the_refused_rows_text_is_escaped_not_dropped(
    open_client: OpenClient, audit: RecordingAudit
) -> None:
    body = {**GOOD, "query": "a\ud800b", "step_id": "s-1"}
    async with open_client(audit=audit) as client:
        await client.post(
            LOOKUP, content=raw_json(body), headers={"content-type": "application/json"}
        )
    [row] = audit.records
    assert (row.run_id, row.tool_call_id, row.query, row.step_id) == (
        "run-1",
        "call-1",
        "a\\ud800b",
        "s-1",
    )


@pytest.mark.parametrize(
    "body",
    [
        {"run_id": "run 42", "tool_call_id": "c", "query": "q"},
        {"tool_call_id": "c", "query": "q"},
        {"run_id": "r", "tool_call_id": "c", "query": "   "},
        {"run_id": "r", "tool_call_id": "c", "query": "q" * 4001},
        {"run_id": "r", "tool_call_id": "c", "query": "q", "filters": {"a": 1}},
    ],
)
async def test_every_refused_lookup_leaves_one_row_with_its_error(
    open_client: OpenClient, audit: RecordingAudit, body: dict[str, Any]
) -> None:
    async with open_client(audit=audit) as client:
        response = await client.post(LOOKUP, json=body)
    assert response.status_code == 422
    [row] = audit.records
    assert (row.success, row.error_code) == (False, "INVALID_REQUEST")
    assert row.tool_call_id == "c"


async def test_a_body_that_is_not_an_object_leaves_no_row(
    open_client: OpenClient, audit: RecordingAudit
) -> None:
    async with open_client(audit=audit) as client:
        not_json = await client.post(
            LOOKUP, content=b'{"run_id": ', headers={"content-type": "application/json"}
        )
        not_object = await client.post(LOOKUP, json=[1, 2, 3])
    assert (not_json.status_code, not_object.status_code) == (400, 422)
    assert audit.records == []  # neither names a call


async def test_a_refused_call_reaches_the_real_table_escaped(
    open_client: OpenClient, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path}/refused.db"
    writer = AuditWriter.open(url, tmp_path / "spool")
    writer.start()
    body = {**GOOD, "query": "a\ud800b", "filters": {"k": "\udfff"}}
    try:
        async with open_client(audit=writer) as client:
            response = await client.post(
                LOOKUP, content=raw_json(body), headers={"content-type": "application/json"}
            )
        assert writer.flush(timeout=20)
    finally:
        writer.close()
    assert response.status_code == 422
    with reader(url) as db:
        [row] = all_rows(db)
    assert (row["query"], row["success"], row["error_code"]) == (
        "a\\ud800b",
        False,
        "INVALID_REQUEST",
    )
