"""Run every case, judge it, and aggregate the figures.

Where the py-rag answers come from is the caller's choice (`SearchOpener`): the recorded
fixtures (offline), a running py-rag, or the embedded engine in process. Everything after the
adapter is the same code either way.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from lookup_knowledge.domain.errors import LookupKnowledgeError
from lookup_knowledge.domain.models import EvidenceStatus
from lookup_knowledge.domain.ports import SearchPort
from lookup_knowledge.evaluation.cases import GoldenCase, PipelineCase
from lookup_knowledge.evaluation.checks import (
    Failure,
    check_expectation,
    check_pipeline_expectation,
    check_rules,
)
from lookup_knowledge.evaluation.fixtures import (
    Fixture,
    RecordedResponse,
    RecordingTransport,
    load_fixture,
    replay_transport,
    save_fixture,
)
from lookup_knowledge.evaluation.metrics import (
    Calibration,
    RetrievalScores,
    TopHit,
    calibrate,
    mean_scores,
    score_ranking,
)
from lookup_knowledge.evaluation.runner import CaseRun, RunConfig, pyrag_over, run_query

SearchOpener = Callable[[GoldenCase], AbstractAsyncContextManager[SearchPort]]

# The metrics kept in the baseline, in report order.
RETRIEVAL_METRICS = ("hit_at_1", "hit_at_5", "recall_at_5", "mrr", "ndcg_at_5")
GRADE_METRICS = ("precise_precision", "reference_precision", "no_evidence_accuracy")
METRIC_LABELS = {
    "hit_at_1": "Hit@1",
    "hit_at_5": "Hit@5",
    "recall_at_5": "Recall@5",
    "mrr": "MRR",
    "ndcg_at_5": "nDCG@5",
    "precise_precision": "PRECISE precision",
    "reference_precision": "REFERENCE precision",
    "no_evidence_accuracy": "NO_EVIDENCE accuracy",
}


@dataclass(frozen=True, slots=True)
class CaseResult:
    case: GoldenCase
    run: CaseRun | None  # None when the case could not run (see failures)
    failures: tuple[Failure, ...]

    @property
    def passed(self) -> bool:
        return not self.failures

    @property
    def documents(self) -> tuple[str, ...]:
        return self.run.documents if self.run is not None else ()

    @property
    def scores(self) -> RetrievalScores | None:
        """Document-level retrieval scores; None for a negative case."""
        if self.case.is_negative:
            return None
        return score_ranking(self.documents, self.case.expected_documents)

    @property
    def top_hit(self) -> TopHit | None:
        if self.run is None or not self.documents or self.run.lookup.top_similarity is None:
            return None
        return TopHit(
            case_id=self.case.id,
            score=self.run.lookup.top_similarity,
            level=self.run.result.relevance_level,
            correct=self.documents[0] in self.case.expected_documents,
        )


@dataclass(frozen=True, slots=True)
class PipelineResult:
    case: PipelineCase
    run: CaseRun | None
    failures: tuple[Failure, ...]

    @property
    def passed(self) -> bool:
        return not self.failures


@dataclass(frozen=True, slots=True)
class SuiteResult:
    source: str  # "fixtures", "embedded engine" or a py-rag URL
    config: RunConfig
    golden: tuple[CaseResult, ...]
    pipeline: tuple[PipelineResult, ...]
    metrics: dict[str, float | None]
    calibration: Calibration

    @property
    def failed(self) -> tuple[CaseResult | PipelineResult, ...]:
        everything: list[CaseResult | PipelineResult] = [*self.golden, *self.pipeline]
        return tuple(r for r in everything if not r.passed)


def tool_call_id(case_id: str) -> str:
    return f"eval-{case_id}"


async def run_golden(
    cases: Sequence[GoldenCase], open_search: SearchOpener, config: RunConfig
) -> tuple[CaseResult, ...]:
    results = []
    for case in cases:
        try:
            async with open_search(case) as search:
                run = await run_query(
                    search,
                    case.query,
                    filters=case.filters,
                    tool_call_id=tool_call_id(case.id),
                    config=config,
                )
        except Exception as exc:  # one broken case is a finding, not the end of the run
            results.append(CaseResult(case, None, (_error(exc),)))
            continue
        failures = check_expectation(case.expect, run.result) + check_rules(run, config)
        results.append(CaseResult(case, run, tuple(failures)))
    return tuple(results)


async def run_pipeline_cases(
    cases: Sequence[PipelineCase], config: RunConfig
) -> tuple[PipelineResult, ...]:
    results = []
    for case in cases:
        try:
            transport = replay_transport(_response(case))
            async with pyrag_over(transport, config) as search:
                run = await run_query(
                    search,
                    case.query,
                    filters=None,
                    tool_call_id=tool_call_id(case.id),
                    config=config,
                )
        except Exception as exc:
            results.append(PipelineResult(case, None, (_error(exc),)))
            continue
        failures = check_pipeline_expectation(case.expect, run.result) + check_rules(run, config)
        results.append(PipelineResult(case, run, tuple(failures)))
    return tuple(results)


def summarize(
    source: str,
    config: RunConfig,
    golden: tuple[CaseResult, ...],
    pipeline: tuple[PipelineResult, ...],
    *,
    target_precision: float,
    reference_precision: float,
) -> SuiteResult:
    positives = [r.scores for r in golden if r.scores is not None]
    means = mean_scores(positives)
    top_hits = [t for t in (r.top_hit for r in golden) if t is not None]
    calibration = calibrate(
        top_hits, target_precision=target_precision, reference_precision=reference_precision
    )
    negatives = [r for r in golden if r.case.is_negative]
    silent = [
        r
        for r in negatives
        if r.run is not None and r.run.result.evidence_status is EvidenceStatus.NO_EVIDENCE
    ]
    metrics: dict[str, float | None] = {
        name: (round(getattr(means, name), 4) if means is not None else None)
        for name in RETRIEVAL_METRICS
    }
    metrics["precise_precision"] = _rounded(calibration.by_level["PRECISE"].value)
    metrics["reference_precision"] = _rounded(calibration.by_level["REFERENCE"].value)
    metrics["no_evidence_accuracy"] = _rounded(len(silent) / len(negatives) if negatives else None)
    return SuiteResult(source, config, golden, pipeline, metrics, calibration)


# --- where the answers come from -------------------------------------------------------


def replayed_from(fixtures_dir: Path, config: RunConfig) -> SearchOpener:
    """Offline: each case's recorded answer, served to a real PyragClient."""

    @asynccontextmanager
    async def open_search(case: GoldenCase) -> AsyncIterator[SearchPort]:
        fixture = load_fixture(fixtures_dir, case.id)
        transport = replay_transport(fixture.response, expected=fixture.request)
        async with pyrag_over(transport, config) as client:
            yield client

    return open_search


def shared(search: SearchPort) -> SearchOpener:
    """Live: one client for every case."""

    @asynccontextmanager
    async def open_search(case: GoldenCase) -> AsyncIterator[SearchPort]:
        yield search

    return open_search


async def record_fixtures(
    cases: Sequence[GoldenCase],
    transport: RecordingTransport,
    *,
    base_url: str,
    recorded_from: str,
    fixtures_dir: Path,
    config: RunConfig,
) -> list[Path]:
    """Send every case's query through the real adapter and keep each exchange as a fixture;
    fixtures of cases that no longer exist are removed."""
    written: list[Path] = []
    async with pyrag_over(transport, config, base_url=base_url) as client:
        for case in cases:
            # An error answer (non-2xx, unreadable body) is recorded like any other.
            with contextlib.suppress(LookupKnowledgeError):
                await client.search(case.query, filters=case.filters)
            request, response = transport.take()
            fixture = Fixture(
                case_id=case.id, recorded_from=recorded_from, request=request, response=response
            )
            written.append(save_fixture(fixtures_dir, fixture))
    keep = {path.name for path in written}
    for stale in fixtures_dir.glob("*.json"):
        if stale.name not in keep:
            stale.unlink()
    return written


def _response(case: PipelineCase) -> RecordedResponse:
    return RecordedResponse(status=200, body=case.upstream)


def _error(exc: Exception) -> Failure:
    return Failure("error", f"{type(exc).__name__}: {exc}")


def _rounded(value: float | None) -> float | None:
    return round(value, 4) if value is not None else None
