"""The absolute `quality_score`: how much of the query a chunk covers, in [0, 1].

BM25 decides which chunks are candidates and breaks ties, but its scores are unbounded and
corpus-relative, and a rank says nothing about whether rank 1 is any good. The service
grades with fixed thresholds, so the engine reports a score with a fixed meaning instead:

    coverage = Σ idf(t) over query terms t the chunk contains  /  Σ idf(t) over all query terms
    quality  = min(1, coverage × (1 + PHRASE_BONUS × adjacency))

* Query terms are the query's distinct tokens after stopwords are dropped; "the chunk" is its
  title, breadcrumb and content together, so a section inherits its document's topic. A term
  is covered when the chunk contains it or a Chinese/English equivalent (`engine.glossary`).
* `idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5))` over the N indexed chunks (BM25's IDF): a
  rare word weighs more than a common one, and a word the corpus has never seen weighs
  the most, so an unknown word in the query cannot be ignored. The weights depend on the
  corpus, but the score is a *share of the query* and means the same on any corpus.
* `adjacency` is the share of the query's consecutive term pairs that also occur close
  together (within 3 tokens) in the chunk: phrase evidence that the chunk talks about the
  query's topic rather than using its words in passing. It only scales what is covered, by at
  most `PHRASE_BONUS` (10 %), so it never makes an uncovered query look covered.

What the thresholds the service applies then mean:

* **≥ 0.75 (PRECISE)**: the chunk covers essentially the whole query — every informative
  term, or all but a low-weight one (a generic word like "排查"/"troubleshoot"): at least
  75 % of the query's weight, or 68 % when its words also stand together in the chunk.
* **≥ 0.5 (REFERENCE)**: the chunk covers the substantial part of the query — half of its
  weight (45 % with phrase evidence) — but misses something the query asked about.
* **< 0.5**: not returned; the chunk shares words with the query, not its topic.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from enum import StrEnum

SCORER_NAME = "idf-coverage-v1"
PHRASE_BONUS = 0.1
PHRASE_WINDOW = 3
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
    """`coverage × (1 + PHRASE_BONUS × adjacency)` before the cap: in [0, 1 + PHRASE_BONUS].

    The index orders hits by this, so among chunks that all cover the whole query (quality
    1.0) the one where the query's words stand together comes first.
    """
    total = sum(weights.values())
    if total <= 0:
        return 0.0
    coverage = sum(w for term, w in weights.items() if term in covered) / total
    adjacency = pairs_found / pairs_total if pairs_total else 0.0
    return coverage * (1 + PHRASE_BONUS * adjacency)


def quality_score(
    weights: Mapping[str, float],
    covered: Collection[str],
    *,
    pairs_total: int = 0,
    pairs_found: int = 0,
) -> float:
    """IDF-weighted share of the query terms `covered`, with a phrase bonus, in [0, 1]."""
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
