"""Export a public development corpus (eval/dev/corpora.json) as a folder of Markdown files.

The corpora are other people's work and are not kept in this repository; what is kept is
where each comes from (repository and commit) and this script, which rebuilds the exact files
the development cases were judged against:

    python eval/dev/export_corpus.py prometheus-runbooks                  # git clone, then export
    python eval/dev/export_corpus.py k8s-practice-zh --git-dir /src/x.git # an existing clone

Files land in `var/corpora/<name>/` (untracked) unless `--out` says otherwise, with paths
relative to the corpus `root`, which is what the engine reports as a hit's `source` and what
the cases name in `relevant`. Only Markdown files under `include` are exported.
"""

from __future__ import annotations

import argparse
import io
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path, PurePosixPath

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parents[1]
MARKDOWN_SUFFIXES = (".md", ".markdown")


def load_corpora() -> dict[str, dict[str, object]]:
    entries = json.loads((HERE / "corpora.json").read_text(encoding="utf-8"))
    return {entry["name"]: entry for entry in entries}


def export(corpus: dict[str, object], git_dir: Path, out: Path) -> int:
    """Write the corpus's Markdown files at its commit into `out`; return how many."""
    commit = str(corpus["commit"])
    include = [str(p) for p in corpus["include"]]  # type: ignore[attr-defined]
    root = PurePosixPath(str(corpus["root"]))
    archive = subprocess.run(
        ["git", f"--git-dir={git_dir}", "archive", "--format=tar", commit, *include],
        check=True,
        capture_output=True,
    ).stdout
    if out.exists():
        shutil.rmtree(out)
    count = 0
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        for member in tar.getmembers():
            path = PurePosixPath(member.name)
            if not member.isfile() or not path.name.lower().endswith(MARKDOWN_SUFFIXES):
                continue
            target = out / path.relative_to(root)
            target.parent.mkdir(parents=True, exist_ok=True)
            data = tar.extractfile(member)
            assert data is not None
            target.write_bytes(data.read())
            count += 1
    return count


def main(argv: list[str] | None = None) -> int:
    corpora = load_corpora()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("name", choices=sorted(corpora))
    parser.add_argument("--git-dir", type=Path, help="an existing clone's .git (or bare repo)")
    parser.add_argument("--out", type=Path, help="default: var/corpora/<name>")
    args = parser.parse_args(argv)
    corpus = corpora[args.name]
    out = args.out or REPO_ROOT / "var" / "corpora" / args.name
    if args.git_dir is not None:
        count = export(corpus, args.git_dir, out)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            clone = Path(tmp) / "repo.git"
            subprocess.run(
                ["git", "clone", "--bare", "--quiet", str(corpus["repository"]), str(clone)],
                check=True,
            )
            count = export(corpus, clone, out)
    print(f"{args.name}: {count} Markdown files at commit {corpus['commit']} -> {out}")
    return 0 if count else 1


if __name__ == "__main__":
    sys.exit(main())
