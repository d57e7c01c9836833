"""Where the evaluation finds its cases and writes its reports, from any working directory.

The repository root is `--root` when given; otherwise the checkout this package is installed
from (an editable install: `src/lookup_knowledge/` lies two levels under it), when it holds
`eval/`; otherwise the current folder. Tracked files are only ever rewritten by an offline
run (`reports/latest.md`, deterministic from the fixtures) or a deliberate `--record` /
`--update-baseline`; everything else lands under `var/eval/` (untracked).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

GOLDEN_DIR = Path("eval") / "rag-retrieval"
DEV_DIR = Path("eval") / "dev"
GOLDEN_CASES = GOLDEN_DIR / "cases" / "golden-cases.json"


def package_checkout() -> Path | None:
    """The repository this package was installed from, when it holds the eval cases."""
    root = Path(__file__).resolve().parents[3]
    return root if (root / GOLDEN_CASES).is_file() else None


def find_root(explicit: Path | None) -> Path:
    if explicit is not None:
        return explicit
    return package_checkout() or Path.cwd()


@dataclass(frozen=True, slots=True)
class Paths:
    root: Path
    out_dir: Path | None = None  # default: <root>/var/eval
    corpora_override: Path | None = None  # default: <root>/var/corpora

    @property
    def base(self) -> Path:
        return self.root / GOLDEN_DIR

    @property
    def golden(self) -> Path:
        return self.root / GOLDEN_CASES

    @property
    def pipeline(self) -> Path:
        return self.base / "cases" / "pipeline-cases.json"

    @property
    def fixtures(self) -> Path:
        return self.base / "fixtures"

    @property
    def baseline(self) -> Path:
        return self.base / "reports" / "baseline.json"

    @property
    def latest(self) -> Path:
        """The tracked report of the offline run over the recorded fixtures."""
        return self.base / "reports" / "latest.md"

    @property
    def dev(self) -> Path:
        return self.root / DEV_DIR

    @property
    def corpora(self) -> Path:
        return self.corpora_override or self.root / "var" / "corpora"

    @property
    def out(self) -> Path:
        return self.out_dir or self.root / "var" / "eval"

    @property
    def live_latest(self) -> Path:
        """Where a live run's tuning-set report goes (untracked)."""
        return self.out / "latest-live.md"

    @property
    def sets_report(self) -> Path:
        return self.out / "sets.md"

    def shown(self, path: Path) -> str:
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return str(path)
