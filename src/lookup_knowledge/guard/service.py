"""Verify a report against the run's ledger: one batch read, the pure rules, one outcome.

See docs/guard.md#route. This is what POST /guard/verify calls; the route only parses and
answers.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable

from lookup_knowledge.domain.errors import LookupKnowledgeError
from lookup_knowledge.domain.guard import (
    OUTCOME_OK,
    OUTCOME_VIOLATIONS,
    GuardOutcome,
    GuardViolationRef,
)
from lookup_knowledge.domain.ledger import sha256_hex
from lookup_knowledge.domain.ports import GuardOutcomePort, LedgerPort
from lookup_knowledge.guard.report import GuardReport, VerifyResult
from lookup_knowledge.guard.verify import verify_report

log = logging.getLogger(__name__)

INVALID_REQUEST = "INVALID_REQUEST"


async def verify_in_ledger(
    report: GuardReport,
    *,
    run_id: str,
    ledger: LedgerPort,
    outcomes: GuardOutcomePort,
    clock: Callable[[], float] = time.perf_counter,
) -> VerifyResult:
    """Read every cited entry of the run in one round trip, judge the report, tell `outcomes`.

    Raises what the ledger raises (LedgerUnavailable): a report is never judged on a ledger
    that could not be read.
    """
    started = clock()
    calls = report.cited_tool_call_ids()
    try:
        entries = await ledger.get_many(run_id, calls)
    except LookupKnowledgeError as exc:
        _tell(outcomes, _outcome(report, run_id, exc.code, started, clock))
        raise
    result = verify_report(report, run_id=run_id, entries=entries)
    outcome = _outcome(
        report,
        run_id,
        OUTCOME_OK if result.ok else OUTCOME_VIOLATIONS,
        started,
        clock,
        result=result,
        found=len(entries),
    )
    _tell(outcomes, outcome)
    return result


def refused(body: object, *, outcomes: GuardOutcomePort) -> None:
    """A request refused as not a report (422) still ends in an outcome: its audit row names
    the run its JSON body gave, if any (docs/audit.md#guard-verifications)."""
    data = body if isinstance(body, dict) else {}
    run_id = data.get("run_id", data.get("runId"))
    if run_id is not None and not isinstance(run_id, str):
        run_id = json.dumps(run_id, default=str)[:256]
    _tell(outcomes, GuardOutcome(run_id=run_id or "", outcome=INVALID_REQUEST))


def _outcome(
    report: GuardReport,
    run_id: str,
    outcome: str,
    started: float,
    clock: Callable[[], float],
    *,
    result: VerifyResult | None = None,
    found: int = 0,
) -> GuardOutcome:
    return GuardOutcome(
        run_id=run_id,
        outcome=outcome,
        violations=tuple(
            GuardViolationRef(code=v.code.value, path=v.path)
            for v in (result.violations if result is not None else ())
        ),
        analysis_count=len(report.analyses),
        citation_count=report.citation_count(),
        tool_call_count=len(report.cited_tool_call_ids()),
        ledger_entry_count=found,
        snapshot_count=len(result.evidence_snapshot) if result is not None else 0,
        report_sha256=sha256_hex(report.model_dump_json()),
        duration_ms=round((clock() - started) * 1000, 3),
    )


def _tell(outcomes: GuardOutcomePort, outcome: GuardOutcome) -> None:
    try:
        outcomes.verification_finished(outcome)
    except Exception:  # the record must never fail the verification it records
        log.exception("recording a guard outcome failed")


__all__ = ["refused", "verify_in_ledger"]
