"""The absolute `quality_score`: how much of the query a chunk covers, in [0, 1].

BM25 decides which chunks are candidates and breaks ties, but its scores are unbounded and
corpus-relative, and a rank says nothing about whether rank 1 is any good. The service
grades with fixed thresholds, so the engine reports a score with a fixed meaning instead:

    scope    = Σ idf(t) over the query's SCOPE_TERMS (16) heaviest terms  (all of them when
               the query has at most 16 terms, which is every ordinary question)
    coverage = Σ idf(t) over query terms t the chunk contains  /  scope
    quality  = min(1, coverage × (1 + PHRASE_BONUS × adjacency))

* Query terms are the query's distinct tokens after stopwords (function words, fillers and
  hedges like "越来越", "怀疑", "keep") are dropped, lightly stemmed (`engine.tokenize`);
  "the chunk" is its title, its document's front-matter tags, its breadcrumb and its content
  together, so a section inherits its document's topic. A term is covered when the chunk
  contains it or a Chinese/English equivalent (`engine.glossary`).
* `idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5))` over the N indexed chunks (BM25's IDF): a
  rare word weighs more than a common one, and a word the corpus has never seen weighs
  the most, so an unknown word in the query cannot be ignored. The weights depend on the
  corpus, but the score is a *share of the query* and means the same on any corpus.
* `scope` is what the chunk has to cover to score 1. For a question of up to 16 terms it is
  the whole query, so the score is exactly the covered share of the query. A pasted incident
  report (50-150 terms: hosts, ids, timestamps, several symptoms) cannot be covered by any
  800-character chunk, yet it is the most informative query an agent sends; for it the scope
  is the weight of its 16 heaviest terms, i.e. a chunk must cover as much of the report as a
  full 16-term question weighs. Words the corpus has never seen are the heaviest, so the
  scope is never smaller than 16 of the report's informative words, and a chunk sharing only
  common words with a long text stays low (the engine tests keep long unrelated reports
  under 0.5). Adding terms never lowers the scope, so a longer query is never easier.
* `adjacency` is the share of the query's consecutive term pairs that also occur close
  together (within 3 tokens) in the chunk: phrase evidence that the chunk talks about the
  query's topic rather than using its words in passing. It only scales what is covered, by at
  most `PHRASE_BONUS` (10 %), so it never makes an uncovered query look covered.

What the thresholds the service applies then mean:

* **≥ 0.75 (PRECISE)**: the chunk covers essentially the whole question — every informative
  term, or all but a low-weight one (a generic word like "排查"/"troubleshoot"): at least
  75 % of the scope's weight, or 68 % when its words also stand together in the chunk. For
  a long report: the chunk covers at least three quarters of a full question's worth of it.
* **≥ 0.5 (REFERENCE)**: the chunk covers the substantial part of the question — half of
  the scope's weight (45 % with phrase evidence) — but misses something it asked about.
* **< 0.5**: not returned; the chunk shares words with the query, not its topic.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from enum import StrEnum

SCORER_NAME = "idf-coverage-v2"
PHRASE_BONUS = 0.1
PHRASE_WINDOW = 3
SCOPE_TERMS = 16  # terms that make a full question; ordinary questions have well under 16
PRECISE_THRESHOLD = 0.75
REFERENCE_THRESHOLD = 0.5


class Level(StrEnum):
    PRECISE = "PRECISE"
    REFERENCE = "REFERENCE"


def idf(document_frequency: int, chunk_count: int) -> float:
    """BM25's IDF; always > 0, largest for a term no chunk contains."""
    return math.log(1 + (chunk_count - document_frequency + 0.5) / (document_frequency + 0.5))


def evidence_strength(
    weights: Mapping[str, float],
    covered: Collection[str],
    *,
    pairs_total: int = 0,
    pairs_found: int = 0,
) -> float:
    """`coverage × (1 + PHRASE_BONUS × adjacency)` before the cap.

    In [0, 1 + PHRASE_BONUS] for a query of at most `SCOPE_TERMS` terms; a longer one can
    cover more than its scope, and `cap` brings that to 1 as well.

    The index orders hits by this, so among chunks that all cover the whole query (quality
    1.0) the one where the query's words stand together comes first.
    """
    total = scope_weight(weights)
    if total <= 0:
        return 0.0
    coverage = sum(w for term, w in weights.items() if term in covered) / total
    adjacency = pairs_found / pairs_total if pairs_total else 0.0
    return coverage * (1 + PHRASE_BONUS * adjacency)


def scope_weight(weights: Mapping[str, float]) -> float:
    """The weight a chunk must cover to score 1: that of the `SCOPE_TERMS` heaviest terms."""
    return sum(sorted(weights.values(), reverse=True)[:SCOPE_TERMS])


def quality_score(
    weights: Mapping[str, float],
    covered: Collection[str],
    *,
    pairs_total: int = 0,
    pairs_found: int = 0,
) -> float:
    """IDF-weighted share of the query's scope `covered`, with a phrase bonus, in [0, 1]."""
    return cap(
        evidence_strength(weights, covered, pairs_total=pairs_total, pairs_found=pairs_found)
    )


def cap(strength: float) -> float:
    """The quality score for an evidence strength: capped at 1, four decimals."""
    return round(min(1.0, strength), 4)


def level_for(score: float) -> Level | None:
    if score >= PRECISE_THRESHOLD:
        return Level.PRECISE
    if score >= REFERENCE_THRESHOLD:
        return Level.REFERENCE
    return None
