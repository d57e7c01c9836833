"""The stations in their order, from the adapter's hits to the agent's bytes.

See docs/pipeline.md#data-path.
"""

from __future__ import annotations

from dataclasses import dataclass

from lookup_knowledge.domain.models import LookupResult, SearchOutcome
from lookup_knowledge.pipeline.assemble import assemble
from lookup_knowledge.pipeline.limits import PipelineLimits, ProjectionLimits
from lookup_knowledge.pipeline.pack import pack_context
from lookup_knowledge.pipeline.postprocess import postprocess
from lookup_knowledge.pipeline.project import Projection, project_data


@dataclass(frozen=True, slots=True)
class PipelineOutput:
    lookup: LookupResult  # the internal full truth
    projection: Projection  # what the agent receives, and its exact bytes


def run_pipeline(
    query: str,
    outcome: SearchOutcome,
    *,
    tool_call_id: str,
    limits: PipelineLimits,
    projection_limits: ProjectionLimits,
) -> PipelineOutput:
    """postprocess → pack → assemble → project; pure, so the service and the evaluation share it."""
    post = postprocess(outcome.hits, limits=limits)
    pack = pack_context(post.blocks, char_budget=limits.pack_char_budget)
    lookup = assemble(query, post, pack, retrieval_trace=outcome.retrieval_trace)
    projection = project_lookup(lookup, tool_call_id=tool_call_id, limits=projection_limits)
    return PipelineOutput(lookup=lookup, projection=projection)


def project_lookup(
    lookup: LookupResult, *, tool_call_id: str, limits: ProjectionLimits
) -> Projection:
    """Station 5 on the internal result's plain data."""
    return project_data(lookup.model_dump(), tool_call_id=tool_call_id, limits=limits)
