"""The per-citation verifier over a served ledger entry: every violation is caught, a genuine
entry passes. It shares its rules with the report verifier (tests/unit/test_guard_report.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx

from lookup_knowledge.domain.contract import RagToolResult
from lookup_knowledge.domain.ledger import LedgerEntry, LedgerStatus, sha256_hex
from lookup_knowledge.guard import CitationKind, ViolationCode, verify_citation
from lookup_knowledge.guard.citation_cli import main

RUN = "run-42"
CALL = "call_x1"

FOUND: dict[str, Any] = {
    "evidence_status": "EVIDENCE_FOUND",
    "tool_call_id": CALL,
    "query": "网关超时怎么排查",
    "evidence": [
        {
            "document_id": "gw-timeout-md#chunk-1",
            "source": "runbooks/gateway-timeout.md",
            "title": "Gateway timeout",
            "breadcrumb": "Gateway timeout > Steps",
            "excerpt": "Check the upstream timeout first ...",
        },
        {"document_id": "nginx-md#chunk-2", "excerpt": "proxy_read_timeout ..."},
    ],
    "returned_count": 2,
    "relevance_level": "PRECISE",
    "truncated": False,
}
NOTHING: dict[str, Any] = {
    "evidence_status": "NO_EVIDENCE",
    "tool_call_id": CALL,
    "query": "网关超时怎么排查",
    "returned_count": 0,
    "truncated": False,
}


def compact(obj: object) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()


def entry(
    result: dict[str, Any] | None = None,
    *,
    body: bytes | None = None,
    run_id: str = RUN,
    tool_call_id: str = CALL,
    status: LedgerStatus = LedgerStatus.READY,
    evidence_status: str | None = None,
    result_sha256: str | None = None,
) -> bytes:
    """A ledger entry as GET /ledger serves it; by default everything but the twist is genuine."""
    if body is None and result is not None:
        body = compact(result)
    if evidence_status is None and result is not None:
        evidence_status = str(result.get("evidence_status"))
    return LedgerEntry(
        run_id=run_id,
        tool_call_id=tool_call_id,
        status=status,
        query_sha256=sha256_hex("网关超时怎么排查"),
        created_at="2026-11-30T10:00:00.123Z",
        evidence_status=evidence_status if status is LedgerStatus.READY else None,
        body=body if status is LedgerStatus.READY else None,
        result_sha256=result_sha256 or (sha256_hex(body) if body is not None else None),
        error="UPSTREAM_ERROR" if status is LedgerStatus.FAILED else None,
    ).to_json_bytes()


SHOWN = "gw-timeout-md#chunk-1"


def codes(entry_json: bytes | None, **kwargs: Any) -> list[ViolationCode]:
    """The codes of a citation of `entry_json`; a NORMAL one cites a shown document by default."""
    kwargs.setdefault("run_id", RUN)
    kwargs.setdefault("kind", CitationKind.NORMAL)
    if kwargs["kind"] is CitationKind.NORMAL:
        kwargs.setdefault("document_id", SHOWN)
    return [v.code for v in verify_citation(entry_json, **kwargs)]


def with_changes(base: dict[str, Any], **changes: Any) -> dict[str, Any]:
    return {**base, **changes}


# -- genuine entries ---------------------------------------------------------------------


def test_a_genuine_entry_passes_a_normal_citation_of_a_shown_document() -> None:
    assert codes(entry(FOUND), document_id="nginx-md#chunk-2", tool_call_id=CALL) == []


def test_a_normal_citation_without_a_document_is_refused_even_on_a_genuine_entry() -> None:
    assert codes(entry(FOUND), document_id=None) == [ViolationCode.DOCUMENT_REQUIRED]


def test_a_negative_observation_naming_a_document_is_refused() -> None:
    found = codes(entry(NOTHING), kind=CitationKind.NEGATIVE_OBSERVATION, document_id=SHOWN)

    assert found == [ViolationCode.UNEXPECTED_DOCUMENT]


def test_a_quote_from_the_excerpt_passes_with_its_whitespace_normalized() -> None:
    found = codes(entry(FOUND), quote="  Check the\n upstream\ttimeout ")

    assert found == []


def test_a_quote_that_is_not_in_the_excerpt_is_refused() -> None:
    assert codes(entry(FOUND), quote="Check the downstream timeout") == [
        ViolationCode.QUOTE_NOT_IN_EXCERPT
    ]


def test_a_quote_from_another_shown_document_is_refused() -> None:
    found = codes(entry(FOUND), document_id=SHOWN, quote="proxy_read_timeout")

    assert found == [ViolationCode.QUOTE_NOT_IN_EXCERPT]


@pytest.mark.parametrize(
    ("kind", "document_id"),
    [(CitationKind.NORMAL, None), (CitationKind.NEGATIVE_OBSERVATION, None)],
    ids=["normal without a document", "negative observation"],
)
def test_a_quote_without_a_cited_document_is_refused(
    kind: CitationKind, document_id: str | None
) -> None:
    result = FOUND if kind is CitationKind.NORMAL else NOTHING

    found = codes(entry(result), kind=kind, document_id=document_id, quote="Check the upstream")

    assert ViolationCode.QUOTE_WITHOUT_DOCUMENT in found


def test_a_blank_quote_is_empty_text() -> None:
    assert codes(entry(FOUND), quote=" \n ") == [ViolationCode.EMPTY_TEXT]


def test_a_genuine_no_evidence_entry_passes_a_negative_observation() -> None:
    assert codes(entry(NOTHING), kind=CitationKind.NEGATIVE_OBSERVATION) == []


def test_the_projectors_own_wire_form_passes() -> None:
    result = RagToolResult.model_validate_json(compact(FOUND))
    assert codes(entry(body=compact(result.to_wire()), evidence_status="EVIDENCE_FOUND")) == []


def test_whitespace_outside_the_result_does_not_matter() -> None:
    genuine = entry(FOUND).decode()
    spaced = genuine.replace('"run_id":', '\n  "run_id" :  ').replace(',"result":', ',\n"result": ')

    assert codes((spaced + "\n").encode()) == []


# -- each violation ----------------------------------------------------------------------


def test_a_missing_entry_is_not_found() -> None:
    assert codes(None) == [ViolationCode.NOT_FOUND]


@pytest.mark.parametrize("raw", [b"", b"not json", b"[1, 2]", b'{"run_id": "run-42"}', b"\xff{}"])
def test_something_that_is_not_a_ledger_entry_is_malformed(raw: bytes) -> None:
    assert codes(raw) == [ViolationCode.MALFORMED_ENTRY]


@pytest.mark.parametrize("status", [LedgerStatus.PENDING, LedgerStatus.FAILED])
def test_an_entry_that_is_not_ready_is_refused(status: LedgerStatus) -> None:
    assert codes(entry(FOUND, status=status)) == [ViolationCode.NOT_READY]


def test_an_entry_of_another_run_is_a_run_mismatch() -> None:
    assert codes(entry(FOUND, run_id="run-other")) == [ViolationCode.RUN_MISMATCH]


def test_an_entry_of_another_tool_call_is_a_tool_call_mismatch() -> None:
    assert codes(entry(FOUND), tool_call_id="call_other") == [ViolationCode.TOOL_CALL_MISMATCH]


def test_a_result_naming_another_tool_call_is_a_tool_call_mismatch() -> None:
    result = with_changes(FOUND, tool_call_id="call_other")

    assert codes(entry(result)) == [ViolationCode.TOOL_CALL_MISMATCH]


def test_a_normal_citation_of_a_no_evidence_entry_is_a_kind_mismatch() -> None:
    assert codes(entry(NOTHING), kind=CitationKind.NORMAL, quote="Check") == [
        ViolationCode.KIND_MISMATCH
    ]


def test_a_negative_observation_over_found_evidence_is_a_kind_mismatch() -> None:
    found = codes(entry(FOUND), kind=CitationKind.NEGATIVE_OBSERVATION)

    assert found == [ViolationCode.KIND_MISMATCH]


def test_a_cited_document_the_agent_was_not_shown_is_refused() -> None:
    found = codes(entry(FOUND), document_id="gw-timeout-md#chunk-3")

    assert found == [ViolationCode.DOCUMENT_NOT_IN_RESULT]


def test_a_document_level_id_does_not_stand_for_its_chunks() -> None:
    assert codes(entry(FOUND), document_id="gw-timeout-md") == [
        ViolationCode.DOCUMENT_NOT_IN_RESULT
    ]


def test_a_tampered_result_is_a_sha_mismatch() -> None:
    genuine = entry(FOUND)
    tampered = genuine.replace(b"first ...", b"last ...")

    assert codes(tampered) == [ViolationCode.SHA_MISMATCH]


def test_a_reformatted_result_is_a_sha_mismatch_even_when_its_data_is_equal() -> None:
    pretty = json.dumps(FOUND, ensure_ascii=False, indent=2).encode()
    genuine_sha = sha256_hex(compact(FOUND))

    assert codes(
        entry(body=pretty, evidence_status="EVIDENCE_FOUND", result_sha256=genuine_sha)
    ) == [ViolationCode.SHA_MISMATCH]


def test_an_ascii_escaped_result_is_a_sha_mismatch() -> None:
    escaped = json.dumps(FOUND, separators=(",", ":")).encode()  # \uXXXX instead of UTF-8
    genuine_sha = sha256_hex(compact(FOUND))

    assert codes(
        entry(body=escaped, evidence_status="EVIDENCE_FOUND", result_sha256=genuine_sha)
    ) == [ViolationCode.SHA_MISMATCH]


def test_a_missing_result_sha_is_a_sha_mismatch() -> None:
    data = json.loads(entry(FOUND))
    data["result_sha256"] = None

    assert codes(compact(data)) == [ViolationCode.SHA_MISMATCH]


@pytest.mark.parametrize(
    "result",
    [
        pytest.param(with_changes(FOUND, score=0.91), id="extra top-level field"),
        pytest.param(with_changes(FOUND, retrieval_trace={"mode": "hybrid"}), id="a trace leaks"),
        pytest.param({k: v for k, v in FOUND.items() if k != "truncated"}, id="missing truncated"),
        pytest.param({k: v for k, v in FOUND.items() if k != "query"}, id="missing query"),
        pytest.param(
            with_changes(
                FOUND,
                evidence=[{**FOUND["evidence"][0], "quality_score": 0.9}, FOUND["evidence"][1]],
            ),
            id="extra item field",
        ),
        pytest.param(
            with_changes(FOUND, evidence=[{"document_id": "d"}, FOUND["evidence"][1]]),
            id="item without excerpt",
        ),
        pytest.param(with_changes(FOUND, returned_count="2"), id="count as a string"),
        pytest.param(with_changes(FOUND, truncated=0), id="truncated as a number"),
        pytest.param(with_changes(FOUND, relevance_level="HIGH"), id="unknown level"),
        pytest.param(with_changes(FOUND, returned_count=3), id="count disagrees with items"),
        pytest.param(with_changes(FOUND, relevance_level=None), id="null instead of omitted"),
        pytest.param(
            with_changes(FOUND, evidence=[{**FOUND["evidence"][1], "title": ""}]),
            id="empty optional item field",
        ),
        pytest.param(with_changes(NOTHING, evidence=[]), id="empty evidence sent"),
    ],
)
def test_a_result_that_is_not_strictly_the_contract_is_a_contract_violation(
    result: dict[str, Any],
) -> None:
    found = codes(entry(result))

    assert ViolationCode.CONTRACT_VIOLATION in found
    assert ViolationCode.SHA_MISMATCH not in found


def test_found_status_without_evidence_is_a_contract_violation() -> None:
    result = with_changes(NOTHING, evidence_status="EVIDENCE_FOUND")

    assert codes(entry(result)) == [
        ViolationCode.CONTRACT_VIOLATION,
        ViolationCode.DOCUMENT_NOT_IN_RESULT,  # and indeed nothing was shown
    ]


def test_a_level_without_evidence_is_a_contract_violation() -> None:
    result = with_changes(NOTHING, relevance_level="PRECISE")

    found = codes(entry(result), kind=CitationKind.NEGATIVE_OBSERVATION)

    assert found == [ViolationCode.CONTRACT_VIOLATION]


def test_an_entry_status_that_disagrees_with_its_result_is_a_contract_violation() -> None:
    found = codes(entry(NOTHING, evidence_status="EVIDENCE_FOUND"))

    assert found == [ViolationCode.CONTRACT_VIOLATION, ViolationCode.DOCUMENT_NOT_IN_RESULT]


def test_a_ready_entry_without_a_result_is_a_contract_violation() -> None:
    data = json.loads(entry(FOUND))
    del data["result"]

    assert codes(compact(data)) == [ViolationCode.CONTRACT_VIOLATION]


def test_an_entry_with_two_results_is_a_contract_violation() -> None:
    genuine = entry(FOUND)
    doubled = genuine[:-1] + b',"result":' + compact(NOTHING) + b"}"

    assert codes(doubled) == [ViolationCode.CONTRACT_VIOLATION]


def test_every_violation_is_reported_not_only_the_first() -> None:
    found = codes(
        entry(FOUND, run_id="run-other", result_sha256="0" * 64),
        document_id="gw-timeout-md#chunk-3",
        tool_call_id="call_other",
        quote="anything",
    )

    assert found == [
        ViolationCode.RUN_MISMATCH,
        ViolationCode.TOOL_CALL_MISMATCH,
        ViolationCode.SHA_MISMATCH,
        ViolationCode.DOCUMENT_NOT_IN_RESULT,
    ]


def test_violations_point_at_the_part_of_the_citation_they_concern() -> None:
    found = verify_citation(
        entry(FOUND, result_sha256="0" * 64),
        run_id=RUN,
        kind=CitationKind.NEGATIVE_OBSERVATION,
        document_id=SHOWN,
        quote="Check",
    )

    assert [(v.code, v.path) for v in found] == [
        (ViolationCode.UNEXPECTED_DOCUMENT, "$.document_id"),
        (ViolationCode.QUOTE_WITHOUT_DOCUMENT, "$.quote"),
        (ViolationCode.KIND_MISMATCH, "$.kind"),
        (ViolationCode.SHA_MISMATCH, "$.tool_call_id"),
    ]


def test_a_violation_reads_as_code_and_message() -> None:
    (violation,) = verify_citation(None, run_id=RUN, kind=CitationKind.NORMAL, document_id=SHOWN)

    assert str(violation).startswith("NOT_FOUND: ")


# -- CLI ---------------------------------------------------------------------------------


def test_the_cli_says_ok_and_exits_zero_for_a_valid_citation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "entry.json"
    path.write_bytes(entry(FOUND))

    code = main(
        [
            "--entry-file",
            str(path),
            "--run-id",
            RUN,
            "--kind",
            "normal",
            "--document-id",
            "gw-timeout-md#chunk-1",
        ]
    )

    assert code == 0
    assert capsys.readouterr().out == "OK\n"


def test_the_cli_prints_violations_and_exits_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "entry.json"
    path.write_bytes(entry(FOUND))

    code = main(
        ["--entry-file", str(path), "--run-id", "run-other", "--kind", "negative-observation"]
    )

    assert code == 1
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in lines] == ["RUN_MISMATCH", "KIND_MISMATCH"]


def test_the_cli_checks_a_quote(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "entry.json"
    path.write_bytes(entry(FOUND))
    argv = ["--entry-file", str(path), "--run-id", RUN, "--kind", "NORMAL", "--document-id", SHOWN]

    assert main([*argv, "--quote", "upstream timeout"]) == 0
    assert main([*argv, "--quote", "downstream timeout"]) == 1
    assert capsys.readouterr().out.splitlines()[-1].startswith("QUOTE_NOT_IN_EXCERPT:")


def test_the_cli_refuses_a_normal_citation_without_a_document(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "entry.json"
    path.write_bytes(entry(FOUND))

    assert main(["--entry-file", str(path), "--run-id", RUN, "--kind", "NORMAL"]) == 1
    assert capsys.readouterr().out.startswith("DOCUMENT_REQUIRED:")


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["--run-id", RUN, "--kind", "NORMAL"],
        ["--entry-file", "x", "--url", "http://x", "--run-id", RUN, "--kind", "NORMAL"],
        ["--entry-file", "x", "--run-id", RUN, "--kind", "SOMETIMES"],
        ["--url", "http://ledger.test", "--run-id", RUN, "--kind", "NORMAL"],
        [
            "--url",
            "http://ledger.test",
            "--run-id",
            "../x",
            "--tool-call-id",
            CALL,
            "--kind",
            "NORMAL",
        ],
    ],
    ids=[
        "nothing",
        "no source",
        "two sources",
        "unknown kind",
        "url without call id",
        "bad run id",
    ],
)
def test_the_cli_exits_two_on_usage_errors(argv: list[str]) -> None:
    assert main(argv) == 2


def test_the_cli_exits_two_when_the_entry_file_is_missing(tmp_path: Path) -> None:
    missing = str(tmp_path / "nope.json")

    assert main(["--entry-file", missing, "--run-id", RUN, "--kind", "NORMAL"]) == 2


URL_ARGS = ["--url", "http://ledger.test/", "--run-id", RUN, "--tool-call-id", CALL]


@respx.mock
def test_the_cli_fetches_the_entry_with_the_bearer_token(
    capsys: pytest.CaptureFixture[str],
) -> None:
    route = respx.get(f"http://ledger.test/ledger/{RUN}/{CALL}").mock(
        return_value=httpx.Response(200, content=entry(FOUND))
    )

    code = main([*URL_ARGS, "--kind", "NORMAL", "--document-id", SHOWN, "--token", "s3cret"])

    assert code == 0
    assert route.calls.last.request.headers["Authorization"] == "Bearer s3cret"
    assert capsys.readouterr().out == "OK\n"


@respx.mock
def test_the_cli_takes_the_token_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOOKUP_KNOWLEDGE_TOKEN", "from-env")
    route = respx.get(f"http://ledger.test/ledger/{RUN}/{CALL}").mock(
        return_value=httpx.Response(200, content=entry(FOUND))
    )

    assert main([*URL_ARGS, "--kind", "NORMAL", "--document-id", SHOWN]) == 0
    assert route.calls.last.request.headers["Authorization"] == "Bearer from-env"


@respx.mock
def test_the_cli_reports_an_unknown_entry_as_not_found(
    capsys: pytest.CaptureFixture[str],
) -> None:
    respx.get(f"http://ledger.test/ledger/{RUN}/{CALL}").mock(
        return_value=httpx.Response(404, json={"error": {"code": "NOT_FOUND"}})
    )

    assert main([*URL_ARGS, "--kind", "NORMAL", "--document-id", SHOWN]) == 1
    assert capsys.readouterr().out.startswith("NOT_FOUND:")


@respx.mock
@pytest.mark.parametrize(
    "answer",
    [httpx.Response(401, json={}), httpx.Response(503, json={}), httpx.ConnectError("refused")],
    ids=["unauthorized", "unavailable", "unreachable"],
)
def test_the_cli_exits_two_when_the_ledger_cannot_be_read(
    answer: httpx.Response | Exception, capsys: pytest.CaptureFixture[str]
) -> None:
    route = respx.get(f"http://ledger.test/ledger/{RUN}/{CALL}")
    if isinstance(answer, Exception):
        route.mock(side_effect=answer)
    else:
        route.mock(return_value=answer)

    assert main([*URL_ARGS, "--kind", "NORMAL"]) == 2
    assert capsys.readouterr().err.startswith("error:")
