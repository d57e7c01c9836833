"""Why the embedded engine answers a query as it does: its reading, its first documents with
their grades, and the rules that decided (`lookup-knowledge pyrag explain`).

A deployment that tunes its own lexicon (`PYRAG_DOCS_DIR/.lexicon/`: engine.lexicon) sees
here what a query's words became and what moved its grade. Each concept is written
`token:how` — `known`, `substring`, `typo`, `bridged`, `word`, `unknown`, `absent` — with `->`
the corpus forms that cover it, `~` the thesaurus's bridge terms and `!` a discourse word
(docs/retrieval.md#reading-the-query). Each document is shown with its grade before any
threshold, its rank and its grading features (docs/retrieval.md#quality-score).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field

from lookup_knowledge.engine import scoring
from lookup_knowledge.engine.index import KnowledgeIndex, NoEvidenceBasis
from lookup_knowledge.engine.query import Concept

Doc = tuple[str, float, float, list[float]]  # source, grade, rank, grading features


def describe(concept: Concept) -> str:
    """One concept as `token:how`, with its corpus forms, bridges and discourse mark."""
    text = f"{concept.token}:{concept.known.value}" + ("!" if concept.discourse else "")
    forms = [v for v in concept.variants if v != concept.token][:3]
    if forms:
        text += "->" + "/".join(forms)
    if concept.bridges:
        text += "~" + "/".join(concept.bridges[:3])
    return text


def documents(
    index: KnowledgeIndex, query: str, top: int, filters: Mapping[str, str] | None = None
) -> list[Doc]:
    """The first `top` documents in the engine's order: source, grade, rank, features."""
    graded = index.grade(query, filters)
    if isinstance(graded, NoEvidenceBasis):
        return []
    found: dict[str, Doc] = {}
    for i in graded.order.tolist():
        source = index.chunk(int(graded.candidates[i])).source
        if source not in found:
            features = [round(float(x), 3) for x in graded.features[i]]
            found[source] = (source, float(graded.quality[i]), float(graded.ranks[i]), features)
            if len(found) == top:
                break
    return list(found.values())


@dataclass(frozen=True, slots=True)
class Explanation:
    query: str
    concepts: list[str]
    answer: str  # the rank-first document's level, or `no_evidence (<basis>)`
    reason: str  # why, when the answer is no evidence
    documents: list[dict[str, object]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False)


def explain(
    index: KnowledgeIndex, query: str, top: int = 5, filters: Mapping[str, str] | None = None
) -> Explanation:
    """The query's reading, its first `top` documents and what decided its answer."""
    read = index.read(query)
    docs = documents(index, query, top, filters)
    notes = []
    if read.bridges:
        notes.append(
            "the thesaurus bridges some of its words to the corpus's terms: a grade they lift "
            "stops under PRECISE"
        )
    if index.lexicon.set_up_question(query) and docs:
        heading = [docs[0][3][i] for i in scoring.HEADINGS]
        kept = max(heading) >= scoring.SET_UP_NAMED
        notes.append(
            "a set-up question without a symptom (data/tasks.txt, data/symptoms.txt): graded "
            "REFERENCE at most, unless the hit's heading is that very task; the first "
            + ("document's is: graded as ever" if kept else "document's is not: capped")
        )
    if not docs:
        answer = f"no_evidence ({NoEvidenceBasis.NO_CANDIDATES.value})"
        reason = index.why_no_candidates(query, filters)
    elif docs[0][1] < scoring.REFERENCE_THRESHOLD:
        answer = f"no_evidence ({NoEvidenceBasis.ALL_BELOW_THRESHOLD.value})"
        reason = f"the rank-first document is graded {docs[0][1]:.4f}, under 0.5"
    else:
        level = scoring.level_for(docs[0][1])
        answer, reason = f"{level.value if level else '-'} {docs[0][1]:.4f}", ""
    rows: list[dict[str, object]] = [
        {
            "source": source,
            "grade": round(grade, 4),
            "rank": round(rank, 2),
            **dict(zip(scoring.FEATURES, features, strict=True)),
        }
        for source, grade, rank, features in docs
    ]
    return Explanation(query, [describe(c) for c in read.concepts], answer, reason, rows, notes)


def render(explanation: Explanation) -> str:
    """The explanation as a few lines of text."""
    answer = explanation.answer + (f": {explanation.reason}" if explanation.reason else "")
    lines = [
        f"== {explanation.query!r}",
        "   reads: " + (" ".join(explanation.concepts) or "-"),
        f"   answer: {answer}",
        *(f"   note: {note}" for note in explanation.notes),
    ]
    if explanation.documents:
        lines.append("   grade      rank  " + "  ".join(scoring.FEATURES) + "  source")
    for row in explanation.documents:
        cells = "  ".join(f"{_number(row[n]):>{len(n)}.3f}" for n in scoring.FEATURES)
        grade, rank = _number(row["grade"]), _number(row["rank"])
        lines.append(f"   {grade:.4f} {rank:8.2f}  {cells}  {row['source']}")
    return "\n".join(lines)


def _number(value: object) -> float:
    return float(value) if isinstance(value, int | float) else float("nan")
