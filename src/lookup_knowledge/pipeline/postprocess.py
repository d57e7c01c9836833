"""Station 2 (docs/pipeline.md#postprocess): rank order, de-duplication, caps and grading."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import replace

from lookup_knowledge.domain.models import (
    EvidenceBlock,
    EvidencePostprocessResult,
    KnowledgeSearchHit,
    RelevanceLevel,
    RerankTraceItem,
)
from lookup_knowledge.pipeline.limits import PipelineLimits

COMPLETENESS_HINTS: dict[RelevanceLevel | None, str] = {
    RelevanceLevel.PRECISE: (
        "No document in the knowledge base is more precise than these results."
    ),
    RelevanceLevel.REFERENCE: (
        "These results are related references, not a precise match; the knowledge base may "
        "hold nothing closer, so confirm them against logs, metrics and alerts."
    ),
    None: (
        "These results are only loosely related to the query; do not rely on them without "
        "other evidence."
    ),
}


def clamp_score(score: float) -> float:
    """Quality score clamped to [0, 1]; anything non-finite counts as 0."""
    if not math.isfinite(score):
        return 0.0
    return min(1.0, max(0.0, score))


def grade(
    top_similarity: float | None, *, precise_threshold: float, reference_threshold: float
) -> RelevanceLevel | None:
    """Inclusive thresholds: >= precise → PRECISE, >= reference → REFERENCE, else no level."""
    if top_similarity is None:
        return None
    if top_similarity >= precise_threshold:
        return RelevanceLevel.PRECISE
    if top_similarity >= reference_threshold:
        return RelevanceLevel.REFERENCE
    return None


def postprocess(
    hits: Iterable[KnowledgeSearchHit], *, limits: PipelineLimits
) -> EvidencePostprocessResult:
    """Walk the hits in py-rag's rank order, merge duplicates, apply the caps, grade the top."""
    ranked = sorted(hits, key=lambda hit: hit.original_rank)
    top_similarity = clamp_score(ranked[0].score) if ranked else None

    blocks: list[EvidenceBlock] = []
    index_by_key: dict[str, int] = {}
    per_document: dict[str, int] = {}
    for hit in ranked:
        seen = index_by_key.get(hit.evidence_key)
        if seen is not None:
            blocks[seen] = _merge(blocks[seen], hit)
            continue
        if per_document.get(hit.doc_id, 0) >= limits.max_chunks_per_document:
            continue
        if len(blocks) >= limits.return_n:
            continue
        index_by_key[hit.evidence_key] = len(blocks)
        per_document[hit.doc_id] = per_document.get(hit.doc_id, 0) + 1
        blocks.append(_block(hit))

    level = (
        grade(
            top_similarity,
            precise_threshold=limits.precise_threshold,
            reference_threshold=limits.reference_threshold,
        )
        if blocks
        else None
    )
    is_low_quality = (
        not blocks or top_similarity is None or (top_similarity < limits.reference_threshold)
    )
    return EvidencePostprocessResult(
        blocks=tuple(blocks),
        candidate_count=len(ranked),
        evidence_block_count=len(blocks),
        top_similarity=top_similarity,
        relevance_level=level,
        completeness_hint=COMPLETENESS_HINTS[level] if blocks else None,
        is_low_quality=is_low_quality,
        rerank_trace=tuple(
            RerankTraceItem(
                final_rank=position,
                source=block.source,
                base_score=block.quality_score,
                final_score=block.quality_score,
            )
            for position, block in enumerate(blocks, start=1)
        ),
    )


def _block(hit: KnowledgeSearchHit) -> EvidenceBlock:
    return EvidenceBlock(
        evidence_key=hit.evidence_key,
        doc_id=hit.doc_id,
        chunk_index=hit.chunk_index,
        content=hit.content,
        quality_score=clamp_score(hit.score),
        original_rank=hit.original_rank,
        source=hit.source,
        title=hit.title,
        breadcrumb=hit.breadcrumb,
        hit_reasons=hit.hit_reasons,
    )


def _merge(first: EvidenceBlock, again: KnowledgeSearchHit) -> EvidenceBlock:
    """A repeated chunk adds its reasons to the first and fills a missing breadcrumb."""
    reasons = first.hit_reasons + tuple(r for r in again.hit_reasons if r not in first.hit_reasons)
    breadcrumb = first.breadcrumb
    if not (breadcrumb and breadcrumb.strip()) and again.breadcrumb and again.breadcrumb.strip():
        breadcrumb = again.breadcrumb
    return replace(first, hit_reasons=reasons, breadcrumb=breadcrumb)
