"""What /openapi.json declares: ids, the error envelope, security, names and bounds.

See docs/http-api.md#openapi. Conformance of the service to it: test_openapi_conformance.py.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from support import OpenClient, RecordingAudit

OPERATIONS = {
    ("post", "/lookup_knowledge"): "lookupKnowledge",
    ("get", "/ledger/{run_id}/{tool_call_id}"): "getLedgerEntry",
    ("get", "/ledger/{run_id}"): "listRunLedger",
    ("get", "/healthz"): "healthz",
    ("get", "/readyz"): "readyz",
    ("get", "/metrics"): "metrics",
    ("post", "/guard/verify"): "verifyReport",
}
ENVELOPE = "#/components/schemas/ErrorEnvelope"


async def openapi(open_client: OpenClient, **settings: Any) -> dict[str, Any]:
    async with open_client(audit=RecordingAudit(), **settings) as client:
        schema: dict[str, Any] = (await client.get("/openapi.json")).json()
    return schema


def ref(response: dict[str, Any]) -> str | None:
    found: str | None = (
        response.get("content", {}).get("application/json", {}).get("schema", {}).get("$ref")
    )
    return found


async def test_every_operation_has_its_stable_operation_id(open_client: OpenClient) -> None:
    paths = (await openapi(open_client))["paths"]
    found = {
        (method, path): operation["operationId"]
        for path, operations in paths.items()
        for method, operation in operations.items()
    }
    assert found == OPERATIONS


async def test_every_error_status_carries_the_error_envelope(open_client: OpenClient) -> None:
    paths = (await openapi(open_client, lookup_api_tokens="a", ledger_api_tokens="b"))["paths"]
    for path, operations in paths.items():
        for method, operation in operations.items():
            for status, response in operation["responses"].items():
                if status.startswith("2") or (path, status) == ("/readyz", "503"):
                    continue
                assert ref(response) == ENVELOPE, (method, path, status)
    lookup = paths["/lookup_knowledge"]["post"]["responses"]
    assert set(lookup) == {
        "200", "400", "401", "403", "408", "409", "413", "422", "500", "502", "503", "504"
    }  # fmt: skip
    assert "Retry-After" in lookup["503"]["headers"]
    assert "WWW-Authenticate" in lookup["401"]["headers"]


async def test_ledger_and_readiness_answers_are_typed(open_client: OpenClient) -> None:
    paths = (await openapi(open_client))["paths"]
    assert ref(paths["/ledger/{run_id}/{tool_call_id}"]["get"]["responses"]["200"]) == (
        "#/components/schemas/LedgerEntryOut"
    )
    assert ref(paths["/ledger/{run_id}"]["get"]["responses"]["200"]) == (
        "#/components/schemas/RunLedgerPage"
    )
    for status in ("200", "503"):
        assert ref(paths["/readyz"]["get"]["responses"][status]) == "#/components/schemas/Readiness"


async def test_each_role_has_its_bearer_scheme_when_its_tokens_are_set(
    open_client: OpenClient,
) -> None:
    schema = await openapi(open_client, lookup_api_tokens="a", ledger_api_tokens="b")
    schemes = schema["components"]["securitySchemes"]
    assert {name: (s["type"], s["scheme"]) for name, s in schemes.items()} == {
        "lookupToken": ("http", "bearer"),
        "ledgerToken": ("http", "bearer"),
    }
    paths = schema["paths"]
    assert paths["/lookup_knowledge"]["post"]["security"] == [{"lookupToken": []}]
    assert paths["/ledger/{run_id}"]["get"]["security"] == [{"ledgerToken": []}]
    assert "security" not in paths["/healthz"]["get"]


async def test_an_open_role_declares_no_security_and_no_auth_errors(
    open_client: OpenClient,
) -> None:
    paths = (await openapi(open_client, lookup_api_tokens="a"))["paths"]
    ledger = paths["/ledger/{run_id}/{tool_call_id}"]["get"]
    assert "security" not in ledger and not {"401", "403"} & set(ledger["responses"])
    assert paths["/lookup_knowledge"]["post"]["security"] == [{"lookupToken": []}]


async def test_names_are_snake_case_and_ids_are_bounded(open_client: OpenClient) -> None:
    schemas = (await openapi(open_client))["components"]["schemas"]
    for name, definition in schemas.items():
        for prop in definition.get("properties", {}):
            assert re.fullmatch(r"[a-z][a-z0-9_]*", prop), (name, prop)
    request = schemas["LookupRequest"]["properties"]
    for field in ("run_id", "tool_call_id"):
        assert request[field]["pattern"] == "^[A-Za-z0-9_.-]{1,128}$"
        assert (request[field]["minLength"], request[field]["maxLength"]) == (1, 128)


@pytest.mark.parametrize(
    ("query", "valid"),
    [
        ("q", True),
        ("  q  ", True),
        ("q" * 300, True),
        ("  " + "q" * 300 + "\n", True),
        ("q" * 301, False),
        ("   ", False),
        ("", False),
    ],
)
async def test_the_query_pattern_says_what_the_service_accepts(
    open_client: OpenClient, query: str, valid: bool
) -> None:
    schema = await openapi(open_client, max_query_chars=300)
    pattern = schema["components"]["schemas"]["LookupRequest"]["properties"]["query"]["pattern"]
    assert bool(re.search(pattern, query)) is valid
    assert (query.strip() != "" and len(query.strip()) <= 300) is valid


async def test_docs_and_redoc_are_served_without_any_outside_asset(
    open_client: OpenClient,
) -> None:
    async with open_client(audit=RecordingAudit()) as client:
        pages = [await client.get("/docs"), await client.get("/redoc")]
        assets = re.findall(r'(?:src|href)="([^"]+)"', "".join(p.text for p in pages))
        fetched = [await client.get(asset) for asset in assets if asset.startswith("/")]
    assert all(page.status_code == 200 for page in pages)
    assert assets and all(asset.startswith("/") for asset in assets), assets
    assert all(r.status_code == 200 and len(r.content) > 1000 for r in fetched)
    assert "cdn" not in "".join(p.text for p in pages)
