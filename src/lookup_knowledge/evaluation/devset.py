"""The development set (`eval/dev/`): frozen cases over corpora nobody here wrote.

Each case file `eval/dev/cases/<corpus>.<writer>.json` holds cases over one corpus: the
bundled knowledge base (`bundled`) or a public corpus of `eval/dev/corpora.json`, exported by
`eval/dev/export_corpus.py` into `var/corpora/<corpus>/` (untracked; absent in CI). A case
names the documents that answer it by their `source` path; a negative case names none.

Every case carries the `split` it was given at the freeze: `tune` cases may be looked at and
tuned on, `holdout` cases are only ever reported in aggregate (`--split holdout|all`).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from lookup_knowledge.evaluation.cases import CASE_ID_PATTERN, CaseFileError

BUNDLED = "bundled"
SPLITS = ("tune", "holdout")
Split = Literal["tune", "holdout"]
NEGATIVE_KINDS = ("negative-near-miss", "negative-off-topic", "negative-vague")
# The kinds of the development set (eval/dev/README.md), in report order.
KINDS = (
    "paraphrase",
    "log-line",
    "typo",
    "identifier",
    "long-report",
    "cross-language",
    "short",
    *NEGATIVE_KINDS,
)


class DevCase(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(pattern=CASE_ID_PATTERN)
    query: str = Field(min_length=1)
    lang: Literal["zh", "en", "mixed"]
    kind: Literal[
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
    ]
    relevant: tuple[str, ...]
    split: Split
    note: str | None = None

    @property
    def is_negative(self) -> bool:
        return not self.relevant


@dataclass(frozen=True, slots=True)
class DevCorpus:
    """One corpus of the development set and its cases (both splits)."""

    name: str
    docs_dir: Path | None  # None: the bundled knowledge base
    cases: tuple[DevCase, ...]
    writers: Mapping[str, str] = field(default_factory=dict)  # case id → its file's writer
    # Declared in corpora.json: its tune half is kept like a holdout (reported in aggregate,
    # never read case by case nor fitted on) until someone decides to tune on it.
    untouched: bool = False

    def selected(self, splits: Iterable[str]) -> tuple[DevCase, ...]:
        wanted = set(splits)
        return tuple(case for case in self.cases if case.split in wanted)


@dataclass(frozen=True, slots=True)
class MissingCorpus:
    """A corpus whose cases exist but whose files are not exported on this machine."""

    name: str
    expected_dir: Path
    export_command: str


def load_dev_corpora(
    dev_dir: Path, corpora_dir: Path, writers: Collection[str] | None = None
) -> tuple[tuple[DevCorpus, ...], tuple[MissingCorpus, ...]]:
    """The corpora with cases under `dev_dir/cases`, split into runnable and missing ones;
    with `writers`, only the cases of the files `<corpus>.<writer>.json` of those writers (a
    file written later is reported apart from the ones before it). Ids are checked across
    every file.

    Order: the bundled knowledge base first, then the public corpora by name.
    """
    every: dict[str, list[DevCase]] = {}
    by_corpus: dict[str, list[DevCase]] = {}
    writer_of: dict[str, str] = {}
    for path in sorted((dev_dir / "cases").glob("*.json")):
        corpus, _, writer = path.name.removesuffix(".json").partition(".")
        cases = _load(path)
        every.setdefault(corpus, []).extend(cases)
        if writers is None or writer in writers:
            by_corpus.setdefault(corpus, []).extend(cases)
            writer_of.update((case.id, writer) for case in cases)
    seen: dict[str, str] = {}
    for corpus, cases in every.items():
        for case in cases:
            if case.id in seen:
                raise CaseFileError(
                    f"development case id {case.id} is in {corpus} and {seen[case.id]}"
                )
            seen[case.id] = corpus
    untouched = _untouched(dev_dir)
    runnable: list[DevCorpus] = []
    missing: list[MissingCorpus] = []
    for name in sorted(by_corpus, key=lambda n: (n != BUNDLED, n)):
        corpus_cases = tuple(by_corpus[name])
        case_writers = {case.id: writer_of[case.id] for case in corpus_cases}
        if name == BUNDLED:
            runnable.append(DevCorpus(name, None, corpus_cases, case_writers))
            continue
        folder = corpora_dir / name
        if folder.is_dir() and any(folder.rglob("*.md")):
            runnable.append(DevCorpus(name, folder, corpus_cases, case_writers, name in untouched))
        else:
            command = f"python eval/dev/export_corpus.py {name}"
            missing.append(MissingCorpus(name, folder, command))
    return tuple(runnable), tuple(missing)


def _untouched(dev_dir: Path) -> frozenset[str]:
    """The corpora `corpora.json` declares untouched (none when it is absent)."""
    try:
        entries = json.loads((dev_dir / "corpora.json").read_text(encoding="utf-8"))
    except FileNotFoundError:
        return frozenset()
    except (OSError, ValueError) as exc:
        raise CaseFileError(f"cannot read {dev_dir / 'corpora.json'}: {exc}") from exc
    return frozenset(e["name"] for e in entries if isinstance(e, dict) and e.get("untouched"))


def _load(path: Path) -> list[DevCase]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise CaseFileError(f"cannot read {path}: {exc.strerror or exc}") from exc
    except ValueError as exc:
        raise CaseFileError(f"{path} is not JSON: {exc}") from exc
    if not isinstance(data, list):
        raise CaseFileError(f"{path} must hold a JSON list of cases")
    cases = []
    for position, item in enumerate(data):
        try:
            cases.append(DevCase.model_validate(item))
        except ValidationError as exc:
            label = item.get("id") if isinstance(item, dict) else None
            raise CaseFileError(
                f"{path}: case {position} ({label or 'no id'}) is invalid:\n{exc}"
            ) from exc
    return cases
