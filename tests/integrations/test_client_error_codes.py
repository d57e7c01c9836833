"""`lookup_knowledge.client` and the server agree on the error codes of docs/errors.md.

Every code the document lists gets a class of its own (never the bare `ApiError` fallback),
consistent with the status it comes with; every code the server can send is in the document.
"""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

from lookup_knowledge.api import errors as api_errors
from lookup_knowledge.client import errors as client_errors
from lookup_knowledge.domain import errors as domain_errors

ERRORS_MD = Path(__file__).resolve().parents[2] / "docs" / "errors.md"
# "| 400 / 422 | `INVALID_REQUEST` |" in a table, "405 `METHOD_NOT_ALLOWED`" in the text
_STATUS_CODE = re.compile(r"\b([1-5]\d\d)(?: / ([1-5]\d\d))?(?: \|)? `([A-Z][A-Z_]+)`")


def documented() -> list[tuple[int, str]]:
    pairs: set[tuple[int, str]] = set()
    for match in _STATUS_CODE.finditer(ERRORS_MD.read_text(encoding="utf-8")):
        first, second, code = match.groups()
        pairs.add((int(first), code))
        if second:
            pairs.add((int(second), code))
    return sorted(pairs)


def server_codes() -> set[str]:
    """Every code the server can put in an envelope."""
    codes = {"INTERNAL_ERROR", "HTTP_ERROR", *api_errors._HTTP_CODES.values()}
    pending: list[type[domain_errors.LookupKnowledgeError]] = [domain_errors.LookupKnowledgeError]
    while pending:
        cls = pending.pop()
        codes.add(cls.code)
        pending.extend(cls.__subclasses__())
    return codes


def test_the_document_lists_the_codes_this_test_reads() -> None:
    """Guards the parser: a reworded table must not make the coverage test vacuous."""
    codes = {code for _, code in documented()}

    assert {"INVALID_REQUEST", "CONFLICT", "OVERLOADED", "METHOD_NOT_ALLOWED"} <= codes
    assert (422, "INVALID_REQUEST") in documented()
    assert (500, "PROJECTION_OVER_BUDGET") in documented()


def test_every_code_the_server_sends_is_documented() -> None:
    missing = server_codes() - {code for _, code in documented()}

    assert not missing, f"codes the server sends that docs/errors.md does not list: {missing}"


@pytest.mark.parametrize(("status", "code"), documented(), ids=lambda v: str(v))
def test_every_documented_code_has_its_own_client_error(status: int, code: str) -> None:
    response = httpx.Response(
        status,
        json={"error": {"code": code, "message": "m", "details": {"k": 1}}},
        headers={"retry-after": "2", "allow": "GET, HEAD"},
    )

    error = client_errors.error_from_response(response)

    assert type(error) not in (client_errors.ApiError, client_errors.ServerError), code
    assert client_errors._BY_CODE[code] is type(error)
    assert (error.status, error.code, error.details) == (status, code, {"k": 1})
    assert isinstance(error, client_errors.ServerError) == (status >= 500)


def test_the_client_knows_no_code_the_document_does_not() -> None:
    assert set(client_errors._BY_CODE) == {code for _, code in documented()}


def test_a_405_names_the_methods_the_path_takes() -> None:
    response = httpx.Response(
        405,
        json={"error": {"code": "METHOD_NOT_ALLOWED", "message": "no", "details": None}},
        headers={"allow": "GET, HEAD"},
    )

    error = client_errors.error_from_response(response)

    assert isinstance(error, client_errors.MethodNotAllowed)
    assert error.allow == ["GET", "HEAD"]
