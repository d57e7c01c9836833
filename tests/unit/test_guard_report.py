"""The report verifier (docs/guard.md): structure rules, citations against ledger entries,
the rebuilt evidence snapshot, and a trigger for every violation code."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from lookup_knowledge.domain.ledger import LedgerEntry, LedgerStatus, sha256_hex
from lookup_knowledge.guard import GuardReport, ViolationCode, verify_report
from lookup_knowledge.guard.codes import Stage
from lookup_knowledge.guard.report import MAX_CITATIONS, MAX_CITED_CALLS, VerifyResult

RUN = "run-42"
DOCS = Path(__file__).resolve().parents[2] / "docs" / "guard.md"


def result(call: str, *docs: tuple[str, str]) -> dict[str, Any]:
    """A RagToolResult of `call` showing (document_id, excerpt) items; none is NO_EVIDENCE."""
    data: dict[str, Any] = {
        "evidence_status": "EVIDENCE_FOUND" if docs else "NO_EVIDENCE",
        "tool_call_id": call,
        "query": "网关超时怎么排查",
    }
    if docs:
        data["evidence"] = [
            {"document_id": d, "source": f"runbooks/{d}.md", "title": "Gateway", "excerpt": x}
            for d, x in docs
        ]
    data["returned_count"] = len(docs)
    if docs:
        data["relevance_level"] = "PRECISE"
    data["truncated"] = False
    return data


def ready(
    call: str, *docs: tuple[str, str], run: str = RUN, body: bytes | None = None
) -> LedgerEntry:
    raw = (
        body or json.dumps(result(call, *docs), ensure_ascii=False, separators=(",", ":")).encode()
    )
    return LedgerEntry(
        run_id=run,
        tool_call_id=call,
        status=LedgerStatus.READY,
        query_sha256=sha256_hex("q"),
        created_at="2026-11-30T10:00:00.123Z",
        evidence_status="EVIDENCE_FOUND" if docs else "NO_EVIDENCE",
        body=raw,
        result_sha256=sha256_hex(raw),
    )


def failed(call: str) -> LedgerEntry:
    return LedgerEntry(
        run_id=RUN,
        tool_call_id=call,
        status=LedgerStatus.FAILED,
        query_sha256=sha256_hex("q"),
        created_at="2026-11-30T10:00:00.123Z",
        error="UPSTREAM_ERROR",
    )


GW = ("gw#chunk-1", "Check the upstream timeout first,\nthen the   keepalive.")
NGINX = ("nginx#chunk-2", "proxy_read_timeout defaults to 60s.")
ENTRIES: dict[str, LedgerEntry | bytes | None] = {
    "call_1": ready("call_1", GW, NGINX),
    "call_2": ready("call_2"),
}


def citation(call: str = "call_1", **fields: Any) -> dict[str, Any]:
    fields.setdefault("kind", "NORMAL")
    if fields["kind"] == "NORMAL":
        fields.setdefault("document_id", GW[0])
    return {"tool_call_id": call, **fields}


def report(**changes: Any) -> dict[str, Any]:
    """A report that passes against ENTRIES; `changes` replace its top-level parts."""
    data: dict[str, Any] = {
        "analyses": [
            {
                "id": "a1",
                "text": "The gateway times out waiting for the upstream.",
                "citations": [citation(quote="Check the upstream timeout first, then the")],
            },
            {
                "id": "a2",
                "text": "The knowledge base has nothing on the new proxy.",
                "citations": [citation("call_2", kind="NEGATIVE_OBSERVATION")],
            },
        ],
        "conclusion": {"text": "Raise the upstream timeout.", "based_on": ["a1"]},
        "action_plan": [{"text": "Check proxy_read_timeout.", "based_on": ["a1", "a2"]}],
        "limitations": ["Only the gateway runbook was consulted."],
    }
    data.update(changes)
    return data


def analysis(*citations: dict[str, Any], id: str = "a1", text: str = "Finding.") -> dict[str, Any]:
    return {"id": id, "text": text, "citations": list(citations)}


def verify(data: dict[str, Any], entries: dict[str, Any] | None = None) -> VerifyResult:
    return verify_report(
        GuardReport.model_validate(data),
        run_id=RUN,
        entries=ENTRIES if entries is None else entries,
    )


def found(data: dict[str, Any], entries: dict[str, Any] | None = None) -> list[tuple[str, str]]:
    return [(v.code.value, v.path) for v in verify(data, entries).violations]


# -- a genuine report --------------------------------------------------------------------


def test_a_genuine_report_passes_with_its_cited_evidence_rebuilt_from_the_ledger() -> None:
    answer = verify(report())

    assert answer.ok and answer.violations == []
    (item,) = answer.evidence_snapshot
    assert item.model_dump(exclude_none=True) == {
        "tool_call_id": "call_1",
        "document_id": "gw#chunk-1",
        "source": "runbooks/gw#chunk-1.md",
        "title": "Gateway",
        "excerpt": GW[1],
    }


def test_a_conclusion_may_be_null_and_the_action_plan_empty() -> None:
    assert verify(report(conclusion=None, action_plan=[])).ok


def test_the_snapshot_holds_each_cited_document_once_in_citation_order() -> None:
    cites = [citation(document_id=NGINX[0]), citation(), citation(document_id=NGINX[0])]
    answer = verify(report(analyses=[analysis(*cites)], action_plan=[]))

    assert answer.ok
    assert [i.document_id for i in answer.evidence_snapshot] == [NGINX[0], GW[0]]


def test_the_snapshot_says_what_the_ledger_holds_not_what_the_report_quotes() -> None:
    answer = verify(report(analyses=[analysis(citation(quote="upstream timeout"))], action_plan=[]))

    assert [i.excerpt for i in answer.evidence_snapshot] == [GW[1]]


def test_the_snapshot_leaves_out_entries_with_violations_of_their_own() -> None:
    genuine = ready("call_1", GW, NGINX)
    assert genuine.body is not None
    forged = _entry("call_1", body=genuine.body.replace(b"first", b"last"))

    answer = verify(report(analyses=[analysis(citation())], action_plan=[]), {"call_1": forged})

    assert [v.code for v in answer.violations] == [ViolationCode.SHA_MISMATCH]
    assert answer.evidence_snapshot == []


def test_a_negative_observation_naming_a_shown_document_adds_nothing_to_the_snapshot() -> None:
    negative = citation(kind="NEGATIVE_OBSERVATION", document_id=GW[0])

    answer = verify(report(analyses=[analysis(negative)], action_plan=[]))

    assert [v.code for v in answer.violations] == [
        ViolationCode.UNEXPECTED_DOCUMENT,
        ViolationCode.KIND_MISMATCH,
    ]
    assert answer.evidence_snapshot == []


def test_a_bad_quote_does_not_keep_the_genuine_item_out_of_the_snapshot() -> None:
    answer = verify(report(analyses=[analysis(citation(quote="not there"))], action_plan=[]))

    assert [v.code for v in answer.violations] == [ViolationCode.QUOTE_NOT_IN_EXCERPT]
    assert [i.document_id for i in answer.evidence_snapshot] == [GW[0]]


def test_an_entry_cited_many_times_is_judged_at_every_citation() -> None:
    cites = [citation(), citation(document_id=NGINX[0])]
    entries = {"call_1": ready("call_1", GW, NGINX, run="run-other")}

    assert found(report(analyses=[analysis(*cites)], action_plan=[]), entries) == [
        ("RUN_MISMATCH", "$.analyses[0].citations[0].tool_call_id"),
        ("RUN_MISMATCH", "$.analyses[0].citations[1].tool_call_id"),
    ]


def test_served_entry_bytes_are_judged_like_entries_from_the_store() -> None:
    served = {call: e.to_json_bytes() for call, e in ENTRIES.items() if isinstance(e, LedgerEntry)}

    assert verify(report(), served) == verify(report())


# -- structure ---------------------------------------------------------------------------


def test_structure_violations_point_at_their_place_in_the_report() -> None:
    data = report(
        analyses=[
            analysis(citation(), id="a1", text="  "),
            analysis(id="a1"),
        ],
        conclusion={"text": "", "based_on": []},
        action_plan=[{"text": "Do it.", "based_on": ["a1", "a9"]}],
        limitations=[],
    )

    assert found(data) == [
        ("EMPTY_TEXT", "$.analyses[0].text"),
        ("DUPLICATE_ANALYSIS_ID", "$.analyses[1].id"),
        ("UNCITED_ANALYSIS", "$.analyses[1].citations"),
        ("EMPTY_TEXT", "$.conclusion.text"),
        ("NO_BASIS", "$.conclusion.based_on"),
        ("UNKNOWN_ANALYSIS", "$.action_plan[0].based_on[1]"),
        ("LIMITATIONS_MISSING", "$.limitations"),
    ]


def test_a_blank_limitation_is_empty_text() -> None:
    assert found(report(limitations=["fine", " \n"])) == [("EMPTY_TEXT", "$.limitations[1]")]


def test_structure_and_citation_violations_are_reported_together() -> None:
    data = report(limitations=[], analyses=[analysis(citation("call_9"))], action_plan=[])

    assert [code for code, _ in found(data)] == ["LIMITATIONS_MISSING", "NOT_FOUND"]


# -- shape and bounds: refused as a whole, not judged ---------------------------------------


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda r: r.pop("limitations"), id="no limitations key"),
        pytest.param(lambda r: r.pop("analyses"), id="no analyses key"),
        pytest.param(lambda r: r.update(extra=1), id="an unknown key"),
        pytest.param(lambda r: r["analyses"][0].update(basedOn=[]), id="an unknown nested key"),
        pytest.param(lambda r: r["analyses"][0]["citations"][0].update(kind="SURE"), id="kind"),
        pytest.param(lambda r: r["analyses"][0].update(id="a 1"), id="analysis id charset"),
        pytest.param(
            lambda r: r["analyses"][0]["citations"][0].update(tool_call_id="call:1"),
            id="tool call id charset",
        ),
        pytest.param(
            lambda r: r["analyses"][0]["citations"][0].update(document_id=""), id="empty doc id"
        ),
        pytest.param(lambda r: r["analyses"][0].update(text="x" * 4001), id="text too long"),
        pytest.param(lambda r: r.update(limitations=["x"] * 21), id="too many limitations"),
    ],
)
def test_a_report_outside_its_schema_is_refused(change: Callable[[dict[str, Any]], Any]) -> None:
    data = report()
    change(data)

    with pytest.raises(ValidationError):
        GuardReport.model_validate(data)


def test_a_report_may_hold_as_many_citations_as_its_bound_and_no_more() -> None:
    per_analysis = MAX_CITATIONS // 10
    at_bound = [analysis(*[citation()] * per_analysis, id=f"a{i}") for i in range(10)]
    GuardReport.model_validate(report(analyses=at_bound))

    over = [*at_bound, analysis(citation(), id="a99")]
    with pytest.raises(ValidationError, match=f"at most {MAX_CITATIONS}"):
        GuardReport.model_validate(report(analyses=over))


def test_a_report_may_cite_as_many_tool_calls_as_its_bound_and_no_more() -> None:
    calls = [citation(f"call_{i}") for i in range(MAX_CITED_CALLS)]
    GuardReport.model_validate(report(analyses=[analysis(*calls)]))

    with pytest.raises(ValidationError, match=f"at most {MAX_CITED_CALLS}"):
        GuardReport.model_validate(report(analyses=[analysis(*calls, citation("call_x"))]))


# -- every code has a trigger ------------------------------------------------------------

ONE = {"action_plan": [], "conclusion": None}


def _only(*cites: dict[str, Any]) -> dict[str, Any]:
    return report(analyses=[analysis(*cites)], **ONE)


def _fields(entry: LedgerEntry) -> dict[str, Any]:
    return {name: getattr(entry, name) for name in LedgerEntry.__slots__}


def _entry(call: str, **changes: Any) -> LedgerEntry:
    return LedgerEntry(**{**_fields(ready(call, GW, NGINX)), **changes})


TRIGGERS: dict[ViolationCode, tuple[dict[str, Any], dict[str, Any] | None]] = {
    ViolationCode.DUPLICATE_ANALYSIS_ID: (
        report(analyses=[analysis(citation()), analysis(citation())], **ONE),
        None,
    ),
    ViolationCode.EMPTY_TEXT: (report(analyses=[analysis(citation(), text=" ")], **ONE), None),
    ViolationCode.UNCITED_ANALYSIS: (_only(), None),
    ViolationCode.UNKNOWN_ANALYSIS: (
        report(
            analyses=[analysis(citation())],
            conclusion={"text": "c", "based_on": ["zz"]},
            action_plan=[],
        ),
        None,
    ),
    ViolationCode.NO_BASIS: (report(action_plan=[{"text": "Act.", "based_on": []}]), None),
    ViolationCode.LIMITATIONS_MISSING: (report(limitations=[]), None),
    ViolationCode.DOCUMENT_REQUIRED: (_only(citation(document_id=None)), None),
    ViolationCode.UNEXPECTED_DOCUMENT: (
        _only(citation("call_2", kind="NEGATIVE_OBSERVATION", document_id=GW[0])),
        None,
    ),
    ViolationCode.NOT_FOUND: (_only(citation("call_9")), None),
    ViolationCode.MALFORMED_ENTRY: (_only(citation()), {"call_1": b"{not json"}),
    ViolationCode.RUN_MISMATCH: (_only(citation()), {"call_1": _entry("call_1", run_id="run-7")}),
    ViolationCode.TOOL_CALL_MISMATCH: (_only(citation()), {"call_1": ready("call_2", GW)}),
    ViolationCode.NOT_READY: (_only(citation()), {"call_1": failed("call_1")}),
    ViolationCode.KIND_MISMATCH: (_only(citation("call_2", document_id=GW[0])), None),
    ViolationCode.DOCUMENT_NOT_IN_RESULT: (_only(citation(document_id="gw#chunk-9")), None),
    ViolationCode.SHA_MISMATCH: (
        _only(citation()),
        {"call_1": _entry("call_1", result_sha256=sha256_hex(b"something else"))},
    ),
    ViolationCode.CONTRACT_VIOLATION: (
        _only(citation("call_2", kind="NEGATIVE_OBSERVATION")),
        {"call_2": ready("call_2", body=b'{"evidence_status":"NO_EVIDENCE","score":1}')},
    ),
    ViolationCode.QUOTE_WITHOUT_DOCUMENT: (
        _only(citation("call_2", kind="NEGATIVE_OBSERVATION", quote="nothing")),
        None,
    ),
    ViolationCode.QUOTE_NOT_IN_EXCERPT: (_only(citation(quote="check the downstream")), None),
}


def test_every_violation_code_has_a_trigger_and_a_stage() -> None:
    assert set(TRIGGERS) == set(ViolationCode)
    assert {code.stage for code in ViolationCode} == set(Stage)


@pytest.mark.parametrize("code", list(TRIGGERS), ids=[c.value for c in TRIGGERS])
def test_each_code_is_triggered_by_its_example(code: ViolationCode) -> None:
    data, entries = TRIGGERS[code]

    codes = [v.code for v in verify(data, {**ENTRIES, **(entries or {})}).violations]

    assert codes == [code]


def test_the_documented_code_table_lists_every_code_with_its_stage() -> None:
    section = DOCS.read_text(encoding="utf-8").split("## Violation codes")[1].split("\n### ")[0]
    rows = re.findall(r"^\| `([A-Z_]+)` \| (\w+) \|", section, re.MULTILINE)

    assert len(rows) == len(ViolationCode)
    assert dict(rows) == {code.value: code.stage.value for code in ViolationCode}
