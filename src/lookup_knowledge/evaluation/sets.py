"""The evaluation sets side by side: the tuning set and each development corpus's halves.

* The **tuning set** is the golden cases of `eval/rag-retrieval/` (answers replayed from the
  recorded fixtures, or asked live). The engine's stopwords, stemmer, glossary and scoring
  were shaped while they were known, so their figures measure the tuning.
* Each **development** corpus (`eval/dev/`) is run through the embedded engine built over that
  corpus, in process, through the same adapter → pipeline → projection path as a lookup; its
  `tune` and `holdout` halves are separate sets. A holdout set keeps only aggregate figures.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import httpx

from lookup_knowledge.evaluation.devset import KINDS, DevCase, DevCorpus
from lookup_knowledge.evaluation.runner import CaseRun, RunConfig, pyrag_over, run_query
from lookup_knowledge.evaluation.scorecard import Outcome, Scorecard, by_kind, score
from lookup_knowledge.evaluation.suite import CaseResult, tool_call_id

TUNING_SET = "tuning set"


@dataclass(frozen=True, slots=True)
class EvalSet:
    """One column of the side-by-side report."""

    label: str  # "tuning set", "bundled · tune", ...
    outcomes: tuple[Outcome, ...]
    per_case: tuple[tuple[str, Outcome], ...]  # (query, outcome); empty for a holdout set
    kinds: tuple[str, ...]  # the kinds to break the figures down by (none for the tuning set)
    writers: tuple[str, ...] = ()  # each outcome's case file writer (none for the tuning set)

    @property
    def scorecard(self) -> Scorecard:
        return score(self.outcomes)

    @property
    def by_kind(self) -> dict[str, Scorecard]:
        return by_kind(self.outcomes, self.kinds)

    @property
    def by_writer(self) -> dict[str, Scorecard]:
        """A scorecard per writer of the set's case files, by name (a later writer's questions
        meet the engine as a new user's do: eval/dev/README.md)."""
        outcomes = zip(self.writers, self.outcomes, strict=True) if self.writers else ()
        grouped: dict[str, list[Outcome]] = {}
        for writer, outcome in outcomes:
            grouped.setdefault(writer, []).append(outcome)
        return {writer: score(grouped[writer]) for writer in sorted(grouped)}


def tuning_set(results: Sequence[CaseResult]) -> EvalSet:
    outcomes = tuple(_golden_outcome(r) for r in results)
    per_case = tuple((r.case.query, o) for r, o in zip(results, outcomes, strict=True))
    return EvalSet(TUNING_SET, outcomes, per_case, ())


def dev_label(corpus: str, split: str) -> str:
    return f"{corpus} · {split}"


async def run_dev_corpus(
    corpus: DevCorpus, splits: Sequence[str], config: RunConfig
) -> list[EvalSet]:
    """Index the corpus with the embedded engine and run the cases of each split through it."""
    from lookup_knowledge.engine.app import create_engine_app

    transport = httpx.ASGITransport(app=create_engine_app(corpus.docs_dir))
    sets: list[EvalSet] = []
    async with pyrag_over(transport, config, base_url="http://embedded-pyrag") as client:
        for split in splits:
            cases = corpus.selected((split,))
            outcomes = []
            for case in cases:
                run = await run_query(
                    client,
                    case.query,
                    filters=None,
                    tool_call_id=tool_call_id(case.id),
                    config=config,
                )
                outcomes.append(dev_outcome(case, run))
            per_case = (
                tuple((c.query, o) for c, o in zip(cases, outcomes, strict=True))
                if split == "tune" and not corpus.untouched
                else ()
            )
            writers = tuple(corpus.writers.get(c.id, "") for c in cases)
            sets.append(
                EvalSet(dev_label(corpus.name, split), tuple(outcomes), per_case, KINDS, writers)
            )
    return sets


def dev_outcome(case: DevCase, run: CaseRun) -> Outcome:
    return Outcome(
        case_id=case.id,
        kind=case.kind,
        relevant=frozenset(case.relevant),
        documents=run.documents,
        level=run.result.relevance_level,
        top_score=run.lookup.top_similarity if run.documents else None,
    )


def _golden_outcome(result: CaseResult) -> Outcome:
    run = result.run
    return Outcome(
        case_id=result.case.id,
        kind="negative" if result.case.is_negative else "positive",
        relevant=frozenset(result.case.expected_documents),
        documents=result.documents,
        level=run.result.relevance_level if run is not None else None,
        top_score=run.lookup.top_similarity if run is not None and result.documents else None,
    )
