"""The absolute `quality_score`: the estimated chance that a hit's document answers the query.

BM25 ranks, but its scores are unbounded and corpus-relative, and a rank says nothing about
whether rank 1 is any good. The service grades with fixed thresholds, so the engine reports a
score with a fixed meaning instead: a probability, calibrated on questions with known answers.

Four features, shares or ratios with the same meaning on any corpus, feed it
(`docs/retrieval.md#quality-score`):

* **support** — how much of the query the hit covers beyond its single heaviest covered
  concept: the IDF-weighted share of the query's concepts (`engine.query`) found in the
  chunk, averaged with the share found anywhere in its document (a runbook answers with all
  its sections), less the heaviest of them. One shared word — even a rare one — proves
  nothing; the rest of the query must agree. The weights of the query's `SCOPE_TERMS`
  heaviest concepts make the whole (a pasted report cannot be covered in full), but never
  less than `SCOPE_SHARE` of all its concepts' weight: hundreds of unrelated words (a word
  salad, random characters) are not covered by covering sixteen of them. Ids weigh
  nothing; typos count as the word they stand for; words the corpus has never seen count
  against it, at half the weight of its rarest word.
* **support × margin** — the margin is how clearly the hit's document is ahead of every
  other document in the ranking: `(rank − best rank of another document) / rank`, in
  [−1, 1]. It counts only through the support: in a small corpus a single word can put one
  document far ahead, which proves nothing when that word is all it shares.
* **heading** — the share of the query found in the chunk's heading path or its document's
  tags: a word in `Title > Section` says what the text is about, one in passing does not.
* **heading coverage** — the other way round, the IDF-weighted share of the chunk's heading
  path and tags that the query names (`engine.grading`): a question about a terse runbook
  covers little of itself but names its title's rare words.

    quality = 1 / (1 + exp(−(WEIGHTS · FEATURES + BIAS)))

`WEIGHTS` and `BIAS` were fitted (logistic regression) on the development set's `tune`
cases and the tuning set by `python -m lookup_knowledge.evaluation.calibrate`: the outcome is
whether the rank-first document answers the question. Fitting on every set but one and
scoring the left-out one ranks right answers above wrong ones and negatives about as well as
fitting on all (`docs/retrieval.md#calibration`).

What the thresholds the service applies then mean:

* **≥ 0.75 (PRECISE)**: about three in four or better: on the tune data, 9 in 10 top
  documents graded so answered the question.
* **≥ 0.5 (REFERENCE)**: more likely right than not.
* **< 0.5**: the engine answers `no_evidence` when the rank-first hit is under 0.5; hits under
  `HIT_FLOOR` are never returned.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

import numpy as np

SCORER_NAME = "calibrated-coverage-v6"
SCOPE_TERMS = 16  # concepts that make a full question; ordinary questions have fewer
SCOPE_SHARE = 1 / 3  # the least share of a query's whole concept weight its scope holds
DOCUMENT_SHARE = 0.5  # weight of document coverage next to chunk coverage
# The grading features, in the order of WEIGHTS (`features` builds them).
FEATURES = ("support", "support_x_margin", "heading", "heading_coverage")
WEIGHTS = (6.988, 6.348, 3.893, 4.388)
BIAS = -3.816
PRECISE_THRESHOLD = 0.75
REFERENCE_THRESHOLD = 0.5
BRIDGE_FACTOR = 0.7  # coverage a thesaurus bridge term gives a concept, of its weight
BRIDGED_CAP = 0.7499  # the most a grade lifted by the thesaurus alone can be: REFERENCE
SET_UP_CAP = 0.7499  # the most a set-up question without a symptom is graded (engine.cues)
SET_UP_NAMED = 0.5  # unless this share of it is in the hit's heading, or of the heading in it
HEADINGS = (FEATURES.index("heading"), FEATURES.index("heading_coverage"))
HIT_FLOOR = 0.2  # hits after the first are returned down to this quality


class Level(StrEnum):
    PRECISE = "PRECISE"
    REFERENCE = "REFERENCE"


def scope_weight(weights: Sequence[float]) -> float:
    """The weight a hit must cover to cover the query: its `SCOPE_TERMS` heaviest concepts,
    or `SCOPE_SHARE` of the weight of all of them if that is more. No question of the
    development sets' tune halves weighs more than 3.6 times its heaviest sixteen concepts
    (99% weigh under 2.9 times); 500 random Chinese characters weigh about ten times theirs."""
    heaviest = sorted(weights, reverse=True)
    return max(sum(heaviest[:SCOPE_TERMS]), SCOPE_SHARE * sum(heaviest))


def margin(rank: np.ndarray, best_other: np.ndarray) -> np.ndarray:
    """How far each hit's rank is ahead of (> 0) or behind (< 0) the best other document."""
    value = np.full(len(rank), -1.0)
    np.divide(rank - best_other, rank, out=value, where=rank > 0)
    np.minimum(np.maximum(value, -1.0, out=value), 1.0, out=value)
    return value


def features(
    *,
    support: np.ndarray,
    margin: np.ndarray,
    heading: np.ndarray,
    heading_coverage: np.ndarray,
) -> np.ndarray:
    """The feature matrix (candidates × FEATURES) the calibrated grade is computed from;
    `support` and `heading` are shares of the scope, `margin` is in [−1, 1],
    `heading_coverage` a share of the hit's heading terms."""
    matrix = np.empty((len(support), len(FEATURES)))
    # Each column clipped into [0, 1] in place (ufuncs: `np.clip` costs several times more).
    for column, values in ((0, support), (2, heading), (3, heading_coverage)):
        np.minimum(np.maximum(values, 0.0), 1.0, out=matrix[:, column])
    np.multiply(matrix[:, 0], margin, out=matrix[:, 1])
    return matrix


def quality(matrix: np.ndarray) -> np.ndarray:
    """The calibrated probability of each row of `features`, four decimals; a row that is
    not a number anywhere (a feature no input should give) is graded 0, never above a
    threshold."""
    logit = matrix @ np.asarray(WEIGHTS) + BIAS
    probability: np.ndarray = np.round(1.0 / (1.0 + np.exp(-logit)), 4)
    missing = np.isnan(probability)
    if missing.any():  # a test, not `nan_to_num`: that copies and checks infinities, per search
        probability[missing] = 0.0
    return probability


def level_for(score: float) -> Level | None:
    if score >= PRECISE_THRESHOLD:
        return Level.PRECISE
    if score >= REFERENCE_THRESHOLD:
        return Level.REFERENCE
    return None
