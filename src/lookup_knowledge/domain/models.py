"""Frozen domain types that the pipeline stations pass to each other (docs/pipeline.md)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, NamedTuple

from pydantic import BaseModel, ConfigDict

# Free-form JSON as py-rag sends it (retrieval_trace); carried, never interpreted.
JsonObject = dict[str, Any]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class RelevanceLevel(StrEnum):
    PRECISE = "PRECISE"
    REFERENCE = "REFERENCE"


class EvidenceStatus(StrEnum):
    EVIDENCE_FOUND = "EVIDENCE_FOUND"
    NO_EVIDENCE = "NO_EVIDENCE"


class KnowledgeSearchHit(NamedTuple):
    """One py-rag hit after the anti-corruption layer (docs/pipeline.md#adapter).

    A named tuple, not a pydantic model: the adapter has checked every field already (a
    non-blank key and text, a finite score, a rank from 1), and a lookup builds up to `top_k`
    of them on its hot path, where validating them again cost more than the checks themselves
    (docs/performance.md#pure-cpu).
    """

    evidence_key: str
    doc_id: str
    content: str
    score: float
    original_rank: int
    chunk_index: int | None = None
    score_label: str = "rerank"
    source: str | None = None
    title: str | None = None
    breadcrumb: str | None = None
    hit_reasons: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchOutcome:
    """What the py-rag adapter hands to the pipeline, plus the counts the audit keeps.

    Built once per lookup by the adapter from checked hits; nothing here is validated again.
    """

    hits: tuple[KnowledgeSearchHit, ...]
    upstream_status: str  # py-rag's evidence_status: "supported" | "no_evidence" | other
    retrieval_trace: JsonObject | None = None  # bounded at the adapter (docs/audit.md#bounds)
    trace_truncated: bool = False  # whether the adapter had to cut it
    hit_count: int = 0  # hits py-rag sent, dropped ones included
    dropped_invalid: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class EvidenceBlock:
    """A de-duplicated, capped hit that survived postprocessing."""

    evidence_key: str
    doc_id: str
    chunk_index: int | None = None
    content: str
    quality_score: float
    original_rank: int
    source: str | None = None
    title: str | None = None
    breadcrumb: str | None = None
    hit_reasons: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class RerankTraceItem:
    final_rank: int
    source: str | None
    base_score: float
    final_score: float
    boost_reasons: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class EvidencePostprocessResult:
    blocks: tuple[EvidenceBlock, ...]
    candidate_count: int
    evidence_block_count: int
    top_similarity: float | None
    relevance_level: RelevanceLevel | None
    completeness_hint: str | None
    is_low_quality: bool
    rerank_trace: tuple[RerankTraceItem, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextPack:
    packed_text: str
    strategy: str
    char_budget: int
    used_chars: int
    included_sources: tuple[str, ...]
    omitted_sources: tuple[str, ...]


class LookupResult(_Frozen):
    """The internal full truth of one lookup; the projector reads it as plain data.

    See docs/pipeline.md#assemble.
    """

    found: bool
    query: str
    evidence_blocks: tuple[EvidenceBlock, ...]
    candidate_count: int
    evidence_block_count: int
    top_similarity: float | None
    relevance_level: RelevanceLevel | None
    completeness_hint: str | None
    context_pack: ContextPack
    retrieval_trace: JsonObject | None
    rerank_trace: tuple[RerankTraceItem, ...]
    message: str | None


class ProjectionSummary(_Frozen):
    """Which gates of the projector cut something (for the audit row)."""

    returned_count: int
    truncated: bool
    cuts: tuple[str, ...] = ()
    body_bytes: int = 0
