"""Rebuild what the agent was shown from one ledger entry, trusting nothing but the ledger.

See docs/guard.md#stages. The checks here depend on the entry alone, not on what a citation
says, so a report that cites one call twenty times rebuilds it once:

* **head** (citation stage): the entry belongs to the verifier's run and the cited call, and
  it is READY (a PENDING or FAILED call showed the agent nothing);
* **tail** (rebuild stage): the result bytes hash to `result_sha256`, and they deserialize
  strictly into the contract of docs/agent-contract.md, with the rules a field-by-field schema
  cannot say (counts, omitted empties) and the entry agreeing with its own result.

Violations come with the path "$"; the citation rules move them to the citation's path.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import ValidationError

from lookup_knowledge.domain.contract import RagToolResult
from lookup_knowledge.domain.ledger import LedgerStatus, sha256_hex
from lookup_knowledge.domain.models import EvidenceStatus
from lookup_knowledge.guard.codes import Violation, ViolationCode, violation
from lookup_knowledge.guard.entry import LedgeredCall

_OPTIONAL_ITEM_FIELDS = ("source", "title", "breadcrumb")


@dataclass(frozen=True, slots=True)
class Rebuilt:
    """One entry, judged: its violations and, when its bytes are the contract, its result."""

    head: tuple[Violation, ...]
    tail: tuple[Violation, ...]
    ready: bool
    evidence_status: str | None
    result: RagToolResult | None  # strictly decoded; None unless READY and the contract

    @property
    def trusted(self) -> bool:
        """Nothing is wrong with the entry: its result may be served as evidence."""
        return self.ready and self.result is not None and not self.head and not self.tail


def rebuild(call: LedgeredCall, *, run_id: str, tool_call_id: str | None) -> Rebuilt:
    """Judge one entry for a verifier of `run_id` that cites `tool_call_id` (None: any call)."""
    head: list[Violation] = []
    if call.run_id != run_id:
        head.append(
            _v(
                ViolationCode.RUN_MISMATCH,
                f"entry belongs to run {call.run_id!r}, not {run_id!r}",
            )
        )
    if tool_call_id is not None and call.tool_call_id != tool_call_id:
        head.append(
            _v(
                ViolationCode.TOOL_CALL_MISMATCH,
                f"entry is for tool call {call.tool_call_id!r}, not {tool_call_id!r}",
            )
        )
    if call.status != LedgerStatus.READY:
        head.append(
            _v(
                ViolationCode.NOT_READY,
                f"entry status is {call.status!r}: the call showed the agent nothing",
            )
        )
        return Rebuilt(tuple(head), (), False, call.evidence_status, None)

    tail: list[Violation] = []
    result = _rebuild_result(call, tail)
    return Rebuilt(tuple(head), tuple(tail), True, call.evidence_status, result)


def _rebuild_result(call: LedgeredCall, found: list[Violation]) -> RagToolResult | None:
    if len(call.results) != 1:
        found.append(
            _v(
                ViolationCode.CONTRACT_VIOLATION,
                f"entry must hold exactly one `result`, it holds {len(call.results)}",
            )
        )
        return None
    raw = call.results[0]
    actual_sha = sha256_hex(raw)
    if call.result_sha256 != actual_sha:
        found.append(
            _v(
                ViolationCode.SHA_MISMATCH,
                f"result bytes hash to {actual_sha}, entry says {call.result_sha256!r}",
            )
        )
    try:
        result = RagToolResult.model_validate_json(raw)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '<result>'}: {err['msg']}"
            for err in exc.errors()
        )
        found.append(
            _v(ViolationCode.CONTRACT_VIOLATION, f"result is not the contract: {problems}")
        )
        return None
    found.extend(_v(ViolationCode.CONTRACT_VIOLATION, p) for p in _shape_problems(result))
    if result.evidence_status != call.evidence_status:
        found.append(
            _v(
                ViolationCode.CONTRACT_VIOLATION,
                f"result says {result.evidence_status.value}, "
                f"the entry says {call.evidence_status!r}",
            )
        )
    if result.tool_call_id != call.tool_call_id:
        found.append(
            _v(
                ViolationCode.TOOL_CALL_MISMATCH,
                f"result is for tool call {result.tool_call_id!r}, "
                f"the entry for {call.tool_call_id!r}",
            )
        )
    return result


def _shape_problems(result: RagToolResult) -> list[str]:
    """Rules of docs/agent-contract.md that a field-by-field schema cannot express.

    "Sent empty or null instead of omitted" is read from the fields the bytes set
    (`model_fields_set`), so the bytes are parsed once.
    """
    problems: list[str] = []
    if result.returned_count != len(result.evidence):
        problems.append(
            f"returned_count {result.returned_count} but {len(result.evidence)} evidence items"
        )
    has_evidence = bool(result.evidence)
    if has_evidence != (result.evidence_status is EvidenceStatus.EVIDENCE_FOUND):
        problems.append(
            f"evidence_status {result.evidence_status.value} with "
            f"{len(result.evidence)} evidence items"
        )
    if result.relevance_level is not None and not has_evidence:
        problems.append("relevance_level present without evidence")
    sent = result.model_fields_set
    if "evidence" in sent and not has_evidence:
        problems.append("`evidence` sent empty or null instead of omitted")
    if "relevance_level" in sent and result.relevance_level is None:
        problems.append("`relevance_level` sent empty or null instead of omitted")
    for n, item in enumerate(result.evidence):
        for key in _OPTIONAL_ITEM_FIELDS:
            if key in item.model_fields_set and getattr(item, key) in (None, ""):
                problems.append(f"`evidence[{n}].{key}` sent empty or null instead of omitted")
    return problems


def _v(code: ViolationCode, message: str) -> Violation:
    return violation(code, "$", message)


__all__ = ["Rebuilt", "rebuild"]
