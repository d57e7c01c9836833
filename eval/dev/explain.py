"""Why the embedded engine misses a development case: its reading of the query and its ranking.

    python eval/dev/explain.py prometheus-runbooks              # the tune half's failures
    python eval/dev/explain.py bundled --kind paraphrase --all  # every paraphrase, passing too
    python eval/dev/explain.py k8s-practice-zh --writer x4      # one writer's cases

For each case: the concepts the engine read from the query (`token:how` — known, substring,
typo, bridged, unknown, absent — with `->` the corpus forms that cover it, `~` the thesaurus's
bridge terms and `!` a discourse word, which names no subject), then the first documents in
the engine's order, each with its grade before any threshold, its rank and its grading
features (`*`: a relevant document). A positive fails when its top document is not relevant or
is graded under REFERENCE; a negative fails when it is graded REFERENCE or above. The summary
sorts the positives' losses:

* `cut` — a relevant document is first but graded under REFERENCE (the grade's to fix);
* `rank` — a relevant document is among the first documents, not first (the ranking's);
* `miss` — none is (recall, or the query's reading);
* `none` — the engine found no candidate at all.

Only the `tune` half is explained: the `holdout` half is reported in aggregate and never read
case by case (eval/dev/README.md), so nothing learnt here can leak into its figures.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from lookup_knowledge.engine import scoring
from lookup_knowledge.engine.corpus import load_documents
from lookup_knowledge.engine.explain import Doc, describe, documents
from lookup_knowledge.engine.index import KnowledgeIndex
from lookup_knowledge.engine.lexicon import Lexicon
from lookup_knowledge.evaluation.devset import DevCase, load_dev_corpora

REPO_ROOT = Path(__file__).resolve().parents[2]
SPLIT = "tune"


def outcome(case: DevCase, docs: Sequence[Doc]) -> str:
    """`ok`, or the failure's bucket (module docstring)."""
    relevant = set(case.relevant)
    answered = bool(docs) and docs[0][1] >= scoring.REFERENCE_THRESHOLD
    if not relevant:
        return "answered" if answered else "ok"
    if not docs:
        return "none"
    if docs[0][0] in relevant:
        return "ok" if answered else "cut"
    return "rank" if any(d[0] in relevant for d in docs) else "miss"


def explain(index: KnowledgeIndex, case: DevCase, docs: Sequence[Doc]) -> str:
    lines = [f"== {case.id} [{case.kind}] {case.query[:300]!r}"]
    lines.append(f"   relevant: {', '.join(sorted(case.relevant)) or '(none: a negative)'}")
    lines.append("   concepts: " + " ".join(describe(c) for c in index.read(case.query).concepts))
    for source, quality, rank, features in docs:
        mark = "*" if source in case.relevant else " "
        lines.append(f"   {mark} {quality:.3f} rank {rank:6.2f} {features} {source}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", help="bundled, or a corpus exported under --corpora-dir")
    parser.add_argument("--kind", action="append", help="only cases of this kind (repeatable)")
    parser.add_argument("--writer", action="append", help="only this writer's files (repeatable)")
    parser.add_argument("--all", action="store_true", help="passing cases too")
    parser.add_argument("--top", type=int, default=5, help="documents shown per case")
    parser.add_argument("--root", type=Path, default=REPO_ROOT, help="repository root")
    parser.add_argument("--corpora-dir", type=Path, help="default: <root>/var/corpora")
    args = parser.parse_args(argv)
    corpora, missing = load_dev_corpora(
        args.root / "eval" / "dev", args.corpora_dir or args.root / "var" / "corpora", args.writer
    )
    corpus = next((c for c in corpora if c.name == args.corpus), None)
    if corpus is None:
        hint = next((m.export_command for m in missing if m.name == args.corpus), None)
        print(f"no development corpus {args.corpus!r} here" + (f": {hint}" if hint else ""))
        return 2
    if corpus.untouched:
        print(
            f"{corpus.name}'s tune half is untouched (eval/dev/corpora.json): it is read in "
            "aggregate only, until someone decides to tune on it and says so in README.md"
        )
        return 2
    index = KnowledgeIndex(load_documents(corpus.docs_dir), Lexicon.load(corpus.docs_dir))
    print(f"per document: grade, rank, [{', '.join(scoring.FEATURES)}], source")
    buckets: Counter[str] = Counter()
    graded_precise = 0
    cases = [c for c in corpus.selected((SPLIT,)) if not args.kind or c.kind in args.kind]
    for case in cases:
        docs = documents(index, case.query, args.top)
        result = outcome(case, docs)
        buckets[result if case.relevant else f"negative {result}"] += 1
        if not case.relevant and docs and docs[0][1] >= scoring.PRECISE_THRESHOLD:
            graded_precise += 1
        if args.all or result != "ok":
            print(explain(index, case, docs))
    positives = sum(1 for c in cases if c.relevant)
    print(
        f"\n{corpus.name} · {SPLIT}: {positives} positives — "
        + ", ".join(f"{name} {buckets[name]}" for name in ("ok", "cut", "rank", "miss", "none"))
        + f"; {len(cases) - positives} negatives — answered {buckets['negative answered']}"
        + f" ({graded_precise} PRECISE)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
