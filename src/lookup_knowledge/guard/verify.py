"""The two library calls: verify one citation, or a whole report (docs/guard.md#library).

Both are pure: the caller hands in the ledger entries (as `LedgerEntry` from the store, or as the
JSON bytes `GET /ledger/{run_id}/{tool_call_id}` served), and both judge them with the same
rules (`citation.py`, `rebuild.py`). Every violation is returned, not only the first.
"""

from __future__ import annotations

from collections.abc import Mapping

from lookup_knowledge.domain.ledger import LedgerEntry
from lookup_knowledge.guard.citation import check_citation
from lookup_knowledge.guard.codes import Violation, ViolationCode, violation
from lookup_knowledge.guard.entry import MalformedEntry, from_entry, from_json
from lookup_knowledge.guard.rebuild import Rebuilt, rebuild
from lookup_knowledge.guard.report import CitationKind, GuardReport, VerifyResult
from lookup_knowledge.guard.snapshot import SnapshotBuilder
from lookup_knowledge.guard.structure import check_structure

EntrySource = LedgerEntry | bytes | None


def verify_citation(
    entry_json: bytes | None,
    *,
    run_id: str,
    kind: CitationKind,
    document_id: str | None = None,
    tool_call_id: str | None = None,
    quote: str | None = None,
) -> list[Violation]:
    """Every reason one citation may not rest on this served entry; empty when it may.

    `tool_call_id` None skips the check that the entry is for the cited call. Paths are
    relative to the citation: `$.kind`, `$.document_id`, ...
    """
    return check_citation(
        judge(entry_json, run_id=run_id, tool_call_id=tool_call_id),
        kind=kind,
        document_id=document_id,
        quote=quote,
        path="$",
    )


def verify_report(
    report: GuardReport, *, run_id: str, entries: Mapping[str, EntrySource]
) -> VerifyResult:
    """Judge a report of `run_id` against the ledger entries of the calls it cites.

    `entries` maps tool_call_id to its entry; a cited call missing from it is NOT_FOUND.
    Each entry is rebuilt once however often it is cited.
    """
    found = check_structure(report)
    rebuilt: dict[str, Rebuilt | None] = {}
    snapshot = SnapshotBuilder()
    for i, analysis in enumerate(report.analyses):
        for j, citation in enumerate(analysis.citations):
            call_id = citation.tool_call_id
            if call_id not in rebuilt:
                rebuilt[call_id] = judge(entries.get(call_id), run_id=run_id, tool_call_id=call_id)
            found.extend(
                check_citation(
                    rebuilt[call_id],
                    kind=citation.kind,
                    document_id=citation.document_id,
                    quote=citation.quote,
                    path=f"$.analyses[{i}].citations[{j}]",
                )
            )
            snapshot.add(citation.kind, call_id, citation.document_id, rebuilt[call_id])
    return VerifyResult(ok=not found, violations=found, evidence_snapshot=snapshot.items())


def judge(source: EntrySource, *, run_id: str, tool_call_id: str | None) -> Rebuilt | None:
    """The rebuilt entry (None when there is none); a malformed one is judged not READY."""
    if source is None:
        return None
    if isinstance(source, LedgerEntry):
        return rebuild(from_entry(source), run_id=run_id, tool_call_id=tool_call_id)
    try:
        call = from_json(source)
    except MalformedEntry as exc:
        bad = violation(ViolationCode.MALFORMED_ENTRY, "$", str(exc))
        return Rebuilt(head=(bad,), tail=(), ready=False, evidence_status=None, result=None)
    return rebuild(call, run_id=run_id, tool_call_id=tool_call_id)


__all__ = ["EntrySource", "judge", "verify_citation", "verify_report"]
