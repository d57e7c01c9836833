"""One query through the real path: PyragClient → postprocess → pack → assemble → project.

The stations are the service's own functions, imported by name, composed as `service.py`
composes them; a test can swap one for a deliberately broken version and watch the
evaluation fail. The limits are the Settings defaults, not the environment, so a local `.env`
cannot move the figures.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass

import httpx

from lookup_knowledge.adapters.pyrag import PyragClient
from lookup_knowledge.domain.contract import RagToolResult
from lookup_knowledge.domain.models import LookupResult, SearchOutcome
from lookup_knowledge.domain.ports import SearchPort
from lookup_knowledge.pipeline.limits import PipelineLimits, ProjectionLimits
from lookup_knowledge.pipeline.project import Projection
from lookup_knowledge.pipeline.run import run_pipeline
from lookup_knowledge.settings import Settings

NO_SOURCE = "(no source)"


@dataclass(frozen=True, slots=True)
class RunConfig:
    pipeline: PipelineLimits
    projection: ProjectionLimits
    top_k: int
    mode: str
    timeout_s: float

    @classmethod
    def defaults(cls) -> RunConfig:
        """The documented defaults (docs/configuration.md), whatever the environment says."""
        settings = Settings.model_construct()
        return cls(
            pipeline=settings.pipeline_limits,
            projection=settings.projection_limits,
            top_k=settings.pyrag_top_k,
            mode=settings.pyrag_mode,
            timeout_s=settings.pyrag_timeout_s,
        )


@dataclass(frozen=True, slots=True)
class CaseRun:
    outcome: SearchOutcome  # what the adapter handed to the pipeline
    lookup: LookupResult  # the internal full truth
    projection: Projection  # what the agent receives

    @property
    def result(self) -> RagToolResult:
        return self.projection.result

    @property
    def documents(self) -> tuple[str, ...]:
        """The agent's evidence mapped back to documents by `source`, best first, distinct."""
        sources = (
            item.source or f"{NO_SOURCE} {item.document_id}" for item in self.result.evidence
        )
        return tuple(dict.fromkeys(sources))


async def run_query(
    search: SearchPort,
    query: str,
    *,
    filters: Mapping[str, str] | None,
    tool_call_id: str,
    config: RunConfig,
) -> CaseRun:
    outcome = await search.search(query, filters=filters)
    output = run_pipeline(
        query,
        outcome,
        tool_call_id=tool_call_id,
        limits=config.pipeline,
        projection_limits=config.projection,
    )
    return CaseRun(outcome=outcome, lookup=output.lookup, projection=output.projection)


@asynccontextmanager
async def pyrag_over(
    transport: httpx.AsyncBaseTransport, config: RunConfig, *, base_url: str = "http://pyrag"
) -> AsyncIterator[PyragClient]:
    """The service's real py-rag client, talking through `transport`."""
    async with httpx.AsyncClient(
        transport=transport, base_url=base_url, timeout=config.timeout_s
    ) as http:
        yield PyragClient(http, top_k=config.top_k, mode=config.mode)
