"""Every violation the guard can report, by stage (docs/guard.md#violation-codes).

A violation names what is wrong (`code`, stable, for programs), where (`path`, a JSONPath into
the report, or into the one citation checked by `verify_citation`) and why (`message`, for
people; it may change).
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field


class Stage(StrEnum):
    STRUCTURE = "structure"  # the report alone: ids, texts, references, limitations
    CITATION = "citation"  # a citation against its ledger entry: exists, run, READY, kind, document
    REBUILD = "rebuild"  # the ledgered result itself: its bytes and its strict contract
    QUOTE = "quote"  # a quoted excerpt against what was shown


class ViolationCode(StrEnum):
    # structure
    DUPLICATE_ANALYSIS_ID = "DUPLICATE_ANALYSIS_ID"
    EMPTY_TEXT = "EMPTY_TEXT"
    UNCITED_ANALYSIS = "UNCITED_ANALYSIS"
    UNKNOWN_ANALYSIS = "UNKNOWN_ANALYSIS"
    NO_BASIS = "NO_BASIS"
    LIMITATIONS_MISSING = "LIMITATIONS_MISSING"
    # citation
    DOCUMENT_REQUIRED = "DOCUMENT_REQUIRED"
    UNEXPECTED_DOCUMENT = "UNEXPECTED_DOCUMENT"
    NOT_FOUND = "NOT_FOUND"
    MALFORMED_ENTRY = "MALFORMED_ENTRY"
    RUN_MISMATCH = "RUN_MISMATCH"
    TOOL_CALL_MISMATCH = "TOOL_CALL_MISMATCH"
    NOT_READY = "NOT_READY"
    KIND_MISMATCH = "KIND_MISMATCH"
    DOCUMENT_NOT_IN_RESULT = "DOCUMENT_NOT_IN_RESULT"
    # rebuild
    SHA_MISMATCH = "SHA_MISMATCH"
    CONTRACT_VIOLATION = "CONTRACT_VIOLATION"
    # quote
    QUOTE_WITHOUT_DOCUMENT = "QUOTE_WITHOUT_DOCUMENT"
    QUOTE_NOT_IN_EXCERPT = "QUOTE_NOT_IN_EXCERPT"

    @property
    def stage(self) -> Stage:
        return _STAGES[self]


_STAGES: dict[ViolationCode, Stage] = {
    **dict.fromkeys(
        [
            ViolationCode.DUPLICATE_ANALYSIS_ID,
            ViolationCode.EMPTY_TEXT,
            ViolationCode.UNCITED_ANALYSIS,
            ViolationCode.UNKNOWN_ANALYSIS,
            ViolationCode.NO_BASIS,
            ViolationCode.LIMITATIONS_MISSING,
        ],
        Stage.STRUCTURE,
    ),
    **dict.fromkeys(
        [
            ViolationCode.DOCUMENT_REQUIRED,
            ViolationCode.UNEXPECTED_DOCUMENT,
            ViolationCode.NOT_FOUND,
            ViolationCode.MALFORMED_ENTRY,
            ViolationCode.RUN_MISMATCH,
            ViolationCode.TOOL_CALL_MISMATCH,
            ViolationCode.NOT_READY,
            ViolationCode.KIND_MISMATCH,
            ViolationCode.DOCUMENT_NOT_IN_RESULT,
        ],
        Stage.CITATION,
    ),
    ViolationCode.SHA_MISMATCH: Stage.REBUILD,
    ViolationCode.CONTRACT_VIOLATION: Stage.REBUILD,
    ViolationCode.QUOTE_WITHOUT_DOCUMENT: Stage.QUOTE,
    ViolationCode.QUOTE_NOT_IN_EXCERPT: Stage.QUOTE,
}


class Violation(BaseModel):
    """One reason the report (or the citation) may not stand."""

    model_config = ConfigDict(frozen=True)

    code: ViolationCode
    path: str = Field("$", description="JSONPath of the offending value, e.g. $.analyses[0].text")
    message: str

    def __str__(self) -> str:
        return f"{self.code.value}: {self.message}"


def violation(code: ViolationCode, path: str, message: str) -> Violation:
    return Violation(code=code, path=path, message=message)


__all__ = ["Stage", "Violation", "ViolationCode", "violation"]
