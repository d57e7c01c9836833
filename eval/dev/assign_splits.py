"""Assign `split` to every development case by the fixed rule, after checking the cases.

The rule (README, "How the cases were made"): within each case file and each `kind`, cases
are ordered by the SHA-256 hex digest of their `id` and alternate `tune`, `holdout`, starting
with `tune`. The split depends only on the ids, so running this twice gives the same files:

    python eval/dev/assign_splits.py           # check, then rewrite cases/*.json with `split`
    python eval/dev/assign_splits.py --check   # check only; fail if a file's splits differ

Before writing anything it checks every file in `cases/`: ids well formed and unique across
all files, required fields present, `kind` and `lang` known, negatives with an empty
`relevant` and positives with a non-empty one, and every `relevant` path present in its
corpus: the bundled knowledge base for `bundled.*.json`, otherwise the exported folder
`var/corpora/<corpus>/` (see export_corpus.py), the corpus being the file name's first part.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parents[1]
CASES_DIR = HERE / "cases"
BUNDLED_KB = REPO_ROOT / "src" / "lookup_knowledge" / "engine" / "kb"
CORPORA_DIR = REPO_ROOT / "var" / "corpora"

KINDS = (
    "paraphrase",
    "log-line",
    "typo",
    "identifier",
    "long-report",
    "cross-language",
    "short",
    "negative-near-miss",
    "negative-off-topic",
    "negative-vague",
)
LANGS = ("en", "zh", "mixed")
REQUIRED = ("id", "query", "lang", "kind", "relevant")
SPLITS = ("tune", "holdout")
ID_PATTERN = re.compile(r"^[A-Za-z0-9_.-]{1,100}$")

Case = dict[str, Any]


def corpus_root(case_file: Path, corpora_dir: Path) -> Path:
    """Folder the file's `relevant` paths are relative to: `<corpus>.<writer>.json`."""
    corpus = case_file.name.split(".", 1)[0]
    return BUNDLED_KB if corpus == "bundled" else corpora_dir / corpus


def check_file(case_file: Path, cases: object, corpora_dir: Path) -> list[str]:
    """Problems in one file's cases (ids across files are checked by the caller)."""
    where = case_file.name
    if not isinstance(cases, list):
        return [f"{where}: top level must be a JSON list of cases"]
    root = corpus_root(case_file, corpora_dir)
    if not root.is_dir():
        return [
            f"{where}: corpus folder {root} is missing; export it first "
            f"(python eval/dev/export_corpus.py {case_file.name.split('.', 1)[0]})"
        ]
    problems: list[str] = []
    for index, case in enumerate(cases):
        label = f"{where}[{index}]"
        if not isinstance(case, dict):
            problems.append(f"{label}: a case must be a JSON object")
            continue
        missing = [field for field in REQUIRED if field not in case]
        if missing:
            problems.append(f"{label}: missing {', '.join(missing)}")
            continue
        case_id, kind, relevant = case["id"], case["kind"], case["relevant"]
        label = f"{where}: {case_id}"
        if not isinstance(case_id, str) or not ID_PATTERN.match(case_id):
            problems.append(f"{label}: id does not match {ID_PATTERN.pattern}")
        if not isinstance(case["query"], str) or not case["query"].strip():
            problems.append(f"{label}: query must be a non-empty string")
        if kind not in KINDS:
            problems.append(f"{label}: unknown kind {kind!r}")
        if case["lang"] not in LANGS:
            problems.append(f"{label}: unknown lang {case['lang']!r}")
        if "split" in case and case["split"] not in SPLITS:
            problems.append(f"{label}: unknown split {case['split']!r}")
        if not isinstance(relevant, list) or not all(isinstance(p, str) for p in relevant):
            problems.append(f"{label}: relevant must be a list of paths")
            continue
        negative = isinstance(kind, str) and kind.startswith("negative-")
        if negative and relevant:
            problems.append(f"{label}: a negative case must have an empty relevant list")
        if not negative and not relevant:
            problems.append(f"{label}: a positive case needs at least one relevant document")
        if len(set(relevant)) != len(relevant):
            problems.append(f"{label}: relevant lists a document twice")
        for path in relevant:
            if not (root / path).is_file():
                problems.append(f"{label}: relevant path {path!r} not found under {root}")
    return problems


def assign(cases: list[Case]) -> list[Case]:
    """Cases in their original order, each with `split` set by the fixed rule."""
    by_kind: dict[str, list[Case]] = defaultdict(list)
    for case in cases:
        by_kind[case["kind"]].append(case)
    split_of: dict[str, str] = {}
    for group in by_kind.values():
        ordered = sorted(group, key=lambda c: hashlib.sha256(c["id"].encode("utf-8")).hexdigest())
        for position, case in enumerate(ordered):
            split_of[case["id"]] = SPLITS[position % 2]
    return [{**case, "split": split_of[case["id"]]} for case in cases]


def render(cases: list[Case]) -> str:
    return json.dumps(cases, ensure_ascii=False, indent=2) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="verify only, write nothing")
    parser.add_argument(
        "--corpora-dir", type=Path, default=CORPORA_DIR, help="default: var/corpora"
    )
    args = parser.parse_args(argv)

    files = sorted(CASES_DIR.glob("*.json"))
    if not files:
        print(f"no case files in {CASES_DIR}", file=sys.stderr)
        return 1
    loaded: dict[Path, list[Case]] = {}
    problems: list[str] = []
    seen: dict[str, str] = {}
    for case_file in files:
        cases = json.loads(case_file.read_text(encoding="utf-8"))
        file_problems = check_file(case_file, cases, args.corpora_dir)
        problems.extend(file_problems)
        if file_problems:
            continue
        for case in cases:
            if case["id"] in seen:
                problems.append(f"{case_file.name}: id {case['id']} also in {seen[case['id']]}")
            seen[case["id"]] = case_file.name
        loaded[case_file] = cases
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 1

    stale: list[str] = []
    for case_file, cases in loaded.items():
        text = render(assign(cases))
        if case_file.read_text(encoding="utf-8") == text:
            continue
        stale.append(case_file.name)
        if not args.check:
            case_file.write_text(text, encoding="utf-8")
    total = sum(len(cases) for cases in loaded.values())
    if args.check and stale:
        print(f"splits missing or not by the rule in: {', '.join(stale)}", file=sys.stderr)
        return 1
    done = "splits follow the rule" if args.check else f"rewrote {len(stale)} file(s)"
    print(f"{total} cases in {len(loaded)} files: {done}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
