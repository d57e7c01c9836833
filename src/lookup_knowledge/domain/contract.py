"""The frozen agent contract, `RagToolResult`: exactly these keys, strictly typed.

See docs/agent-contract.md.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from lookup_knowledge.domain.models import EvidenceStatus, RelevanceLevel


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)


class RagEvidenceItem(_Strict):
    document_id: str = Field(min_length=1)
    source: str | None = None
    title: str | None = None
    breadcrumb: str | None = None
    excerpt: str = Field(min_length=1)

    def to_wire(self) -> dict[str, str]:
        """The item's JSON object, in field order; a null or empty optional field is omitted
        (`document_id` and `excerpt` are never empty)."""
        data = {"document_id": self.document_id}
        for name, value in (
            ("source", self.source),
            ("title", self.title),
            ("breadcrumb", self.breadcrumb),
        ):
            if value:
                data[name] = value
        data["excerpt"] = self.excerpt
        return data


class RagToolResult(_Strict):
    evidence_status: Literal[EvidenceStatus.EVIDENCE_FOUND, EvidenceStatus.NO_EVIDENCE]
    tool_call_id: str
    query: str
    evidence: tuple[RagEvidenceItem, ...] = ()
    returned_count: int = Field(ge=0)
    relevance_level: RelevanceLevel | None = None
    truncated: bool

    def to_wire(self) -> dict[str, object]:
        """The JSON object the agent receives: null or empty optional fields are omitted."""
        data: dict[str, object] = {
            "evidence_status": self.evidence_status.value,
            "tool_call_id": self.tool_call_id,
            "query": self.query,
        }
        if self.evidence:
            data["evidence"] = [item.to_wire() for item in self.evidence]
        data["returned_count"] = self.returned_count
        if self.relevance_level is not None:
            data["relevance_level"] = self.relevance_level.value
        data["truncated"] = self.truncated
        return data
