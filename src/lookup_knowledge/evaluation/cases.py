"""Golden cases (what a query is meant to find) and pipeline cases (fixed py-rag answers).

A golden case names its expected runbooks by their `source` path in the knowledge base
(`redis/redis-memory.md`), never by the engine's document id (it carries a content hash)
nor by chunk ids or scores: those change with every legitimate re-chunking or re-scoring.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal, Self, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from lookup_knowledge.domain.models import EvidenceStatus, RelevanceLevel

# A case id becomes a file name and part of a tool_call_id (`eval-<id>`, at most 128 chars).
CASE_ID_PATTERN = r"^[A-Za-z0-9_.-]{1,100}$"


class CaseFileError(ValueError):
    """A case file is missing, is not JSON, or holds an invalid case."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Expectation(_Frozen):
    """The pipeline behaviour a golden case asserts; unset fields are not asserted."""

    evidence_status: EvidenceStatus
    min_relevance_level: RelevanceLevel | None = None
    truncated: bool | None = None


class GoldenCase(_Frozen):
    id: str = Field(pattern=CASE_ID_PATTERN)
    query: str = Field(min_length=1)
    lang: Literal["zh", "en", "mixed"]
    expected_documents: tuple[str, ...] = ()
    expect: Expectation
    tags: tuple[str, ...] = ()
    filters: dict[str, str] | None = None
    note: str | None = None

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        found = self.expect.evidence_status is EvidenceStatus.EVIDENCE_FOUND
        if found and not self.expected_documents:
            raise ValueError("an EVIDENCE_FOUND case names at least one expected document")
        if not found and (self.expected_documents or self.expect.min_relevance_level):
            raise ValueError("a NO_EVIDENCE case expects no document and no relevance level")
        if len(set(self.expected_documents)) != len(self.expected_documents):
            raise ValueError("expected_documents repeats a document")
        return self

    @property
    def is_negative(self) -> bool:
        return not self.expected_documents


class PipelineExpectation(_Frozen):
    """Everything about the agent's answer is asserted: these cases pin docs/pipeline.md."""

    evidence_status: EvidenceStatus
    evidence: tuple[str, ...]  # the citation coordinates (document_id), in order
    relevance_level: RelevanceLevel | None
    truncated: bool


class PipelineCase(_Frozen):
    """A hand-written py-rag answer exercising a rule the bundled engine never triggers
    (its rank order always agrees with its scores, its chunks are short, its hits valid)."""

    id: str = Field(pattern=CASE_ID_PATTERN)
    query: str = Field(min_length=1)
    note: str
    upstream: dict[str, Any]  # the raw py-rag response body, served as is
    expect: PipelineExpectation


CaseT = TypeVar("CaseT", GoldenCase, PipelineCase)


def load_golden_cases(path: Path) -> tuple[GoldenCase, ...]:
    return _load(path, GoldenCase)


def load_pipeline_cases(path: Path) -> tuple[PipelineCase, ...]:
    return _load(path, PipelineCase)


def _load(path: Path, model: type[CaseT]) -> tuple[CaseT, ...]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise CaseFileError(f"cannot read {path}: {exc.strerror or exc}") from exc
    except ValueError as exc:
        raise CaseFileError(f"{path} is not JSON: {exc}") from exc
    if not isinstance(data, list):
        raise CaseFileError(f"{path} must hold a JSON list of cases")
    cases: list[CaseT] = []
    for position, item in enumerate(data):
        try:
            cases.append(model.model_validate(item))
        except ValidationError as exc:
            label = item.get("id") if isinstance(item, dict) else None
            raise CaseFileError(
                f"{path}: case {position} ({label or 'no id'}) is invalid:\n{exc}"
            ) from exc
    ids = [case.id for case in cases]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise CaseFileError(f"{path}: duplicate case ids {', '.join(duplicates)}")
    return tuple(cases)
