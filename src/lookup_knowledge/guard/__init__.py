"""EvidenceGuard: verify an agent's citations, or its whole report, against the evidence ledger.

See docs/guard.md. The library calls (`verify_report`, `verify_citation`) and the rules are
pure; `service.verify_in_ledger` reads the ledger for the HTTP route (`route.py`); the commands
`verify-report` and `verify-citation` are in `report_cli.py` and `citation_cli.py`.
"""

from lookup_knowledge.guard.codes import Stage, Violation, ViolationCode
from lookup_knowledge.guard.report import (
    ActionItem,
    Analysis,
    Citation,
    CitationKind,
    Conclusion,
    GuardReport,
    SnapshotItem,
    VerifyRequest,
    VerifyResult,
)
from lookup_knowledge.guard.verify import verify_citation, verify_report

__all__ = [
    "ActionItem",
    "Analysis",
    "Citation",
    "CitationKind",
    "Conclusion",
    "GuardReport",
    "SnapshotItem",
    "Stage",
    "VerifyRequest",
    "VerifyResult",
    "Violation",
    "ViolationCode",
    "verify_citation",
    "verify_report",
]
