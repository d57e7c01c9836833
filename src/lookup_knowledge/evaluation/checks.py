"""The behaviour assertions every case is judged by.

Two kinds: what the case itself expects (`expect.*`), and the docs/pipeline.md rules restated as an
oracle over the hits the adapter produced (`rule.*`): the agent's evidence must be exactly
the selection the postprocess makes from them, graded from the rank-first hit, inside the contract
bounds. The oracle is written independently of `pipeline/` on purpose: a station that breaks
a rule disagrees with it on real retrieval data, whatever the metrics say.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from lookup_knowledge.domain.contract import RagToolResult
from lookup_knowledge.domain.models import EvidenceStatus, KnowledgeSearchHit, RelevanceLevel
from lookup_knowledge.evaluation.cases import Expectation, PipelineExpectation
from lookup_knowledge.evaluation.runner import CaseRun, RunConfig

_LEVEL_RANK = {None: 0, RelevanceLevel.REFERENCE: 1, RelevanceLevel.PRECISE: 2}


@dataclass(frozen=True, slots=True)
class Failure:
    check: str  # a stable name, e.g. "expect.evidence_status"; the baseline keeps these
    detail: str


def check_expectation(expect: Expectation, result: RagToolResult) -> list[Failure]:
    failures: list[Failure] = []
    if result.evidence_status is not expect.evidence_status:
        failures.append(
            Failure(
                "expect.evidence_status",
                f"expected {expect.evidence_status.value}, got {result.evidence_status.value}",
            )
        )
    wanted = expect.min_relevance_level
    if wanted is not None and _LEVEL_RANK[result.relevance_level] < _LEVEL_RANK[wanted]:
        got = result.relevance_level.value if result.relevance_level else "no level"
        failures.append(
            Failure("expect.min_relevance_level", f"expected at least {wanted.value}, got {got}")
        )
    if expect.truncated is not None and result.truncated is not expect.truncated:
        failures.append(
            Failure(
                "expect.truncated", f"expected truncated={expect.truncated}, got {result.truncated}"
            )
        )
    return failures


def check_pipeline_expectation(expect: PipelineExpectation, result: RagToolResult) -> list[Failure]:
    failures = check_expectation(
        Expectation(evidence_status=expect.evidence_status, truncated=expect.truncated), result
    )
    got = tuple(item.document_id for item in result.evidence)
    if got != expect.evidence:
        failures.append(
            Failure("expect.evidence", f"expected {list(expect.evidence)}, got {list(got)}")
        )
    if result.relevance_level is not expect.relevance_level:
        failures.append(
            Failure(
                "expect.relevance_level",
                f"expected {_name(expect.relevance_level)}, got {_name(result.relevance_level)}",
            )
        )
    return failures


def check_rules(run: CaseRun, config: RunConfig) -> list[Failure]:
    """docs/pipeline.md#postprocess and #project on this case's data: selection, grade, bounds."""
    result = run.result
    failures: list[Failure] = []
    hits = sorted(run.outcome.hits, key=lambda hit: hit.original_rank)

    selected = expected_selection(
        hits,
        max_chunks_per_document=config.pipeline.max_chunks_per_document,
        return_n=config.pipeline.return_n,
    )
    got = tuple(item.document_id for item in result.evidence)
    cut_short = result.truncated and got == selected[: len(got)]
    if got != selected and not cut_short:
        failures.append(
            Failure(
                "rule.selection",
                f"the postprocess selects {list(selected)} from the hits in rank order; "
                f"the agent got {list(got)}",
            )
        )

    level = None
    if hits and result.evidence:
        level = grade(
            hits[0].score,
            precise=config.pipeline.precise_threshold,
            reference=config.pipeline.reference_threshold,
        )
    if result.relevance_level is not level:
        failures.append(
            Failure(
                "rule.grade",
                f"the rank-first hit grades {_name(level)}, the agent got "
                f"{_name(result.relevance_level)}",
            )
        )

    bounds = config.projection
    problems = []
    if result.returned_count != len(result.evidence):
        problems.append("returned_count differs from the evidence count")
    if (result.evidence_status is EvidenceStatus.EVIDENCE_FOUND) != bool(result.evidence):
        problems.append("evidence_status disagrees with the evidence")
    if len(result.evidence) > bounds.max_evidence:
        problems.append(f"more than {bounds.max_evidence} items")
    if any(len(item.excerpt) > bounds.max_excerpt_chars for item in result.evidence):
        problems.append(f"an excerpt over {bounds.max_excerpt_chars} characters")
    if len(run.projection.body) > bounds.max_bytes:
        problems.append(f"a body over {bounds.max_bytes} bytes")
    if len(run.lookup.query) > bounds.max_query_chars and not result.truncated:
        problems.append("the query echo was cut without truncated=true")
    if problems:
        failures.append(Failure("rule.contract", "; ".join(problems)))
    return failures


def expected_selection(
    hits: Iterable[KnowledgeSearchHit], *, max_chunks_per_document: int, return_n: int
) -> tuple[str, ...]:
    """The evidence keys the postprocess (docs/pipeline.md#postprocess) keeps from ranked hits."""
    keys: list[str] = []
    per_document: Counter[str] = Counter()
    for hit in hits:
        if len(keys) >= return_n:
            break
        if hit.evidence_key in keys or per_document[hit.doc_id] >= max_chunks_per_document:
            continue
        keys.append(hit.evidence_key)
        per_document[hit.doc_id] += 1
    return tuple(keys)


def grade(score: float, *, precise: float, reference: float) -> RelevanceLevel | None:
    clamped = min(1.0, max(0.0, score))
    if clamped >= precise:
        return RelevanceLevel.PRECISE
    if clamped >= reference:
        return RelevanceLevel.REFERENCE
    return None


def _name(level: RelevanceLevel | None) -> str:
    return level.value if level is not None else "no level"
