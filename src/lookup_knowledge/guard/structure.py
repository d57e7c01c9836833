"""Structure rules: what a report gets wrong by itself, before any ledger is read.

See docs/guard.md#stages. Analysis ids are unique, every text says something, every analysis
cites something, the conclusion and each action rest on declared analyses, and the limitations
are stated.
"""

from __future__ import annotations

from lookup_knowledge.guard.codes import Violation, ViolationCode, violation
from lookup_knowledge.guard.report import GuardReport


def check_structure(report: GuardReport) -> list[Violation]:
    """Every structural violation of the report, in document order."""
    found: list[Violation] = []
    declared: set[str] = set()
    for i, analysis in enumerate(report.analyses):
        at = f"$.analyses[{i}]"
        if analysis.id in declared:
            found.append(
                violation(
                    ViolationCode.DUPLICATE_ANALYSIS_ID,
                    f"{at}.id",
                    f"analysis id {analysis.id!r} is declared more than once",
                )
            )
        declared.add(analysis.id)
        _text(found, analysis.text, f"{at}.text")
        if not analysis.citations:
            found.append(
                violation(
                    ViolationCode.UNCITED_ANALYSIS,
                    f"{at}.citations",
                    "an analysis must cite at least one tool call",
                )
            )

    if report.conclusion is not None:
        _text(found, report.conclusion.text, "$.conclusion.text")
        _basis(found, report.conclusion.based_on, declared, "$.conclusion.based_on")
    for i, action in enumerate(report.action_plan):
        _text(found, action.text, f"$.action_plan[{i}].text")
        _basis(found, action.based_on, declared, f"$.action_plan[{i}].based_on")

    if not report.limitations:
        found.append(
            violation(
                ViolationCode.LIMITATIONS_MISSING,
                "$.limitations",
                "a report must state at least one limitation",
            )
        )
    for i, limitation in enumerate(report.limitations):
        _text(found, limitation, f"$.limitations[{i}]")
    return found


def _text(found: list[Violation], text: str, path: str) -> None:
    if not text.strip():
        found.append(violation(ViolationCode.EMPTY_TEXT, path, "the text is blank"))


def _basis(found: list[Violation], based_on: list[str], declared: set[str], path: str) -> None:
    if not based_on:
        found.append(
            violation(ViolationCode.NO_BASIS, path, "it must rest on at least one analysis")
        )
    for j, analysis_id in enumerate(based_on):
        if analysis_id not in declared:
            found.append(
                violation(
                    ViolationCode.UNKNOWN_ANALYSIS,
                    f"{path}[{j}]",
                    f"no analysis has the id {analysis_id!r}",
                )
            )


__all__ = ["check_structure"]
