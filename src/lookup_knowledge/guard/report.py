"""The report an agent hands in, and what the guard answers about it (docs/guard.md#report).

The models say the report's shape and its bounds; a report outside them is refused as a whole
(422 over HTTP). What a well-shaped report may still get wrong (blank texts, duplicate ids,
dangling references, citations the ledger does not back) is answered as violations by the
rules of this package, so an agent can be told every problem at once.

`report.schema.json` next to this file is generated from `GuardReport` (see `schema.py`).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Self

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, model_validator

from lookup_knowledge.domain.models import EvidenceStatus
from lookup_knowledge.guard.codes import Violation

ID_PATTERN = r"^[A-Za-z0-9_.-]{1,128}$"
ANALYSIS_ID_PATTERN = r"^[A-Za-z0-9_.-]{1,64}$"

# Bounds of one report (docs/guard.md#bounds). The request body as a whole is bounded by the
# service's 64 KiB body limit; the count bounds keep one verification to one bounded ledger read.
MAX_ANALYSES = 50
MAX_CITATIONS = 200  # in the whole report
MAX_CITED_CALLS = 50  # distinct tool_call_ids in the whole report
MAX_ACTIONS = 20
MAX_LIMITATIONS = 20
MAX_BASED_ON = 50
MAX_TEXT_CHARS = 4000
MAX_QUOTE_CHARS = 2000
MAX_DOCUMENT_ID_CHARS = 512


class CitationKind(StrEnum):
    NORMAL = "NORMAL"  # cites evidence the agent was shown
    NEGATIVE_OBSERVATION = "NEGATIVE_OBSERVATION"  # cites that the search found nothing

    @property
    def required_status(self) -> EvidenceStatus:
        if self is CitationKind.NORMAL:
            return EvidenceStatus.EVIDENCE_FOUND
        return EvidenceStatus.NO_EVIDENCE


class _Part(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


Text = Annotated[str, Field(max_length=MAX_TEXT_CHARS, description="Non-blank prose.")]
AnalysisId = Annotated[str, Field(pattern=ANALYSIS_ID_PATTERN)]
BasedOn = Annotated[
    list[AnalysisId],
    Field(
        max_length=MAX_BASED_ON,
        description="Ids of the analyses this rests on; at least one, each declared above.",
    ),
]


class Citation(_Part):
    """One ledgered tool call an analysis rests on."""

    tool_call_id: Annotated[
        str, Field(pattern=ID_PATTERN, description="The lookup_knowledge call cited.")
    ]
    kind: Annotated[
        CitationKind,
        Field(
            description="NORMAL: the call found evidence, and document_id names the item cited. "
            "NEGATIVE_OBSERVATION: the call found nothing (NO_EVIDENCE); no document_id."
        ),
    ]
    document_id: Annotated[
        str | None,
        Field(
            min_length=1,
            max_length=MAX_DOCUMENT_ID_CHARS,
            description="Required for NORMAL: an evidence[].document_id of that call's answer.",
        ),
    ] = None
    quote: Annotated[
        str | None,
        Field(
            max_length=MAX_QUOTE_CHARS,
            description="Optional: words copied from that document's excerpt "
            "(compared after whitespace is normalized).",
        ),
    ] = None


class Analysis(_Part):
    """One finding, resting on at least one citation."""

    id: Annotated[AnalysisId, Field(description="Unique within the report.")]
    text: Text
    citations: Annotated[list[Citation], Field(description="At least one.")]


class Conclusion(_Part):
    """What the analyses support; null when they support none."""

    text: Text
    based_on: BasedOn


class ActionItem(_Part):
    """One step to take, resting on analyses."""

    text: Text
    based_on: BasedOn


class GuardReport(_Part):
    """An agent's diagnosis report: analyses citing ledgered calls, and what follows from them."""

    model_config = ConfigDict(
        title="GuardReport",
        json_schema_extra={
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "description": (
                "An agent's diagnosis report, verified by POST /guard/verify. Every analysis "
                "cites the lookup_knowledge calls it rests on; the conclusion (null when the "
                f"evidence does not support one) and the action plan name the analyses they "
                f"rest on; limitations are required. At most {MAX_CITATIONS} citations naming "
                f"at most {MAX_CITED_CALLS} distinct tool calls in the whole report."
            ),
        },
    )

    analyses: Annotated[list[Analysis], Field(max_length=MAX_ANALYSES)]
    conclusion: Conclusion | None = None
    action_plan: Annotated[list[ActionItem], Field(max_length=MAX_ACTIONS)] = []
    limitations: Annotated[
        list[Annotated[str, Field(max_length=MAX_TEXT_CHARS)]],
        Field(
            max_length=MAX_LIMITATIONS,
            description="What the evidence does not show; at least one, non-blank.",
        ),
    ]

    @model_validator(mode="after")
    def _bounded(self) -> Self:
        citations = sum(len(a.citations) for a in self.analyses)
        if citations > MAX_CITATIONS:
            raise ValueError(f"the report has {citations} citations, at most {MAX_CITATIONS}")
        calls = len(self.cited_tool_call_ids())
        if calls > MAX_CITED_CALLS:
            raise ValueError(f"the report cites {calls} tool calls, at most {MAX_CITED_CALLS}")
        return self

    def cited_tool_call_ids(self) -> list[str]:
        """Distinct cited tool_call_ids in the order they first appear."""
        return list(dict.fromkeys(c.tool_call_id for a in self.analyses for c in a.citations))

    def citation_count(self) -> int:
        return sum(len(a.citations) for a in self.analyses)


# -- the request and the answer of POST /guard/verify --------------------------------------


class VerifyRequest(BaseModel):
    """Body of POST /guard/verify; `runId` is accepted for `run_id`, unknown keys are ignored."""

    model_config = ConfigDict(extra="ignore")

    run_id: Annotated[
        str,
        Field(
            pattern=ID_PATTERN,
            validation_alias=AliasChoices("run_id", "runId"),
            description="The run that wrote the report.",
        ),
    ]
    report: GuardReport


class SnapshotItem(BaseModel):
    """A cited evidence item as the ledger holds it (never as the report retells it)."""

    model_config = ConfigDict(frozen=True)

    tool_call_id: str
    document_id: str
    source: str | None = None
    title: str | None = None
    breadcrumb: str | None = None
    excerpt: str


class VerifyResult(BaseModel):
    """The guard's answer: `ok` when there is no violation."""

    model_config = ConfigDict(frozen=True)

    ok: bool
    violations: list[Violation]
    evidence_snapshot: list[SnapshotItem] = Field(
        description="The ledgered items the report's cited documents resolve to, in citation "
        "order, each once; only from entries with no violation of their own."
    )


__all__ = [
    "MAX_CITATIONS",
    "MAX_CITED_CALLS",
    "ActionItem",
    "Analysis",
    "Citation",
    "CitationKind",
    "Conclusion",
    "GuardReport",
    "SnapshotItem",
    "VerifyRequest",
    "VerifyResult",
]
