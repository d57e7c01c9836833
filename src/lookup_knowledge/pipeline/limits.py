"""Policy numbers of the pipeline, passed explicitly to each station.

See docs/pipeline.md and docs/configuration.md#pipeline-policy.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class PipelineLimits:
    max_chunks_per_document: int = 2
    return_n: int = 5
    precise_threshold: float = 0.75
    reference_threshold: float = 0.5
    pack_char_budget: int = 4000


@dataclass(frozen=True, slots=True)
class ProjectionLimits:
    max_query_chars: int = 500
    max_evidence: int = 8
    max_excerpt_chars: int = 1200
    max_bytes: int = 16384
