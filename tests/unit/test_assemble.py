"""docs/pipeline.md#assemble: the assembler carries everything and decides only `found`."""

from __future__ import annotations

from builders import hit
from lookup_knowledge.pipeline.assemble import NO_EVIDENCE_MESSAGE, assemble
from lookup_knowledge.pipeline.limits import PipelineLimits
from lookup_knowledge.pipeline.pack import pack_context
from lookup_knowledge.pipeline.postprocess import postprocess


def _assemble(hits, trace=None):  # type: ignore[no-untyped-def]
    post = postprocess(hits, limits=PipelineLimits())
    return post, assemble(
        "q", post, pack_context(post.blocks, char_budget=4000), retrieval_trace=trace
    )


def test_found_result_carries_the_postprocess_result_and_trace() -> None:
    trace = {"mode": "hybrid", "recall_count": 2}
    post, result = _assemble([hit("a#chunk-0", 0.9, 1), hit("b#chunk-0", 0.6, 2)], trace)
    assert result.found is True
    assert result.message is None
    assert result.evidence_blocks == post.blocks
    assert (result.candidate_count, result.evidence_block_count) == (2, 2)
    assert result.top_similarity == post.top_similarity
    assert result.relevance_level == post.relevance_level
    assert result.completeness_hint == post.completeness_hint
    assert result.rerank_trace == post.rerank_trace
    assert result.retrieval_trace == trace
    assert result.context_pack.included_sources == ("runbooks/a.md", "runbooks/b.md")


def test_no_usable_block_means_not_found_with_the_fixed_message() -> None:
    _, result = _assemble([])
    assert result.found is False
    assert result.message == NO_EVIDENCE_MESSAGE
    assert "logs, metrics and alerts" in result.message


def test_the_lookup_result_serializes_in_snake_case() -> None:
    _, result = _assemble([hit("a#chunk-0", 0.9, 1)])
    text = result.model_dump_json()
    assert '"evidence_blocks"' in text and '"context_pack"' in text
