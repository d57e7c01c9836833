"""Station 4 (docs/pipeline.md#assemble): put the internal full truth of one lookup together."""

from __future__ import annotations

from lookup_knowledge.domain.models import (
    ContextPack,
    EvidencePostprocessResult,
    JsonObject,
    LookupResult,
)

NO_EVIDENCE_MESSAGE = (
    "The knowledge base returned no usable evidence for this query. This only says that this "
    "search found nothing; continue the diagnosis with logs, metrics and alerts."
)


def assemble(
    query: str,
    evidence: EvidencePostprocessResult,
    context_pack: ContextPack,
    *,
    retrieval_trace: JsonObject | None,
) -> LookupResult:
    """Carry everything; the only decision made here is `found`."""
    found = bool(evidence.blocks)
    return LookupResult(
        found=found,
        query=query,
        evidence_blocks=evidence.blocks,
        candidate_count=evidence.candidate_count,
        evidence_block_count=evidence.evidence_block_count,
        top_similarity=evidence.top_similarity,
        relevance_level=evidence.relevance_level,
        completeness_hint=evidence.completeness_hint,
        context_pack=context_pack,
        retrieval_trace=retrieval_trace,
        rerank_trace=evidence.rerank_trace,
        message=None if found else NO_EVIDENCE_MESSAGE,
    )
