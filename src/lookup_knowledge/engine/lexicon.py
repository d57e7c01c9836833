"""Stopwords and the Chinese↔English glossary: data files shipped with the package, plus a
deployment's own.

The shipped lists live in `engine/data/` (`stopwords-en.txt`, `stopwords-zh.txt`,
`glossary.txt`). A deployment that indexes its own folder (`PYRAG_DOCS_DIR`) extends them with
files in that folder's `.lexicon/` subfolder (never indexed: the engine skips dot-folders):

* `.lexicon/stopwords.txt` — more stopwords, whitespace-separated;
* `.lexicon/glossary.txt` — more equivalence groups, one per line.

In every file `#` starts a comment. Stopwords are function words and fillers: a query is
about its content words. Glossary groups say which words mean the same thing across
languages (`内存 memory`); a query term counts as covered when a chunk holds it or one of its
equivalents, and recall looks for all of them. An entry is read the way a query is (stemmed,
lowercased); an entry that is not one query token could never match one and is reported by
`unusable_entries` (a test keeps the shipped glossary free of them).
"""

from __future__ import annotations

import importlib.resources
from dataclasses import dataclass, field
from pathlib import Path

from lookup_knowledge.engine import tokenize

LEXICON_DIR = ".lexicon"
STOPWORD_FILES = ("stopwords-en.txt", "stopwords-zh.txt")
GLOSSARY_FILE = "glossary.txt"
DEPLOYMENT_STOPWORDS = "stopwords.txt"


def _read_shipped(name: str) -> str:
    return (
        importlib.resources.files("lookup_knowledge.engine")
        .joinpath("data", name)
        .read_text(encoding="utf-8")
    )


def _lines(text: str) -> list[list[str]]:
    """Whitespace-separated words per line, comments and blank lines dropped."""
    rows = []
    for line in text.splitlines():
        words = line.split("#", 1)[0].split()
        if words:
            rows.append(words)
    return rows


@dataclass(frozen=True, slots=True)
class Lexicon:
    stopwords: frozenset[str]
    groups: tuple[tuple[str, ...], ...]
    sources: tuple[str, ...] = ()  # the deployment files that were read, for the log
    _table: dict[str, frozenset[str]] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def load(cls, docs_dir: Path | None = None) -> Lexicon:
        """The shipped lists, extended by `docs_dir/.lexicon/` when it exists."""
        stop_text = [_read_shipped(name) for name in STOPWORD_FILES]
        glossary_text = [_read_shipped(GLOSSARY_FILE)]
        sources: list[str] = []
        if docs_dir is not None:
            extra = Path(docs_dir) / LEXICON_DIR
            for name, bucket in ((DEPLOYMENT_STOPWORDS, stop_text), (GLOSSARY_FILE, glossary_text)):
                path = extra / name
                if path.is_file():
                    bucket.append(path.read_text(encoding="utf-8"))
                    sources.append(str(path))
        stopwords = frozenset(
            tokenize.normalize(w) for text in stop_text for row in _lines(text) for w in row
        )
        groups = tuple(tuple(row) for text in glossary_text for row in _lines(text) if len(row) > 1)
        lexicon = cls(stopwords, groups, tuple(sources))
        lexicon._table.update(lexicon._build_table())
        return lexicon

    def _build_table(self) -> dict[str, frozenset[str]]:
        table: dict[str, set[str]] = {}
        for words in self.groups:
            group = {t for t in (self.entry_token(w) for w in words) if t is not None}
            for token in group:
                table.setdefault(token, set()).update(group)
        return {token: frozenset(group) for token, group in table.items()}

    def entry_token(self, word: str) -> str | None:
        """The single query token a glossary entry stands for, or None if it is not one."""
        found = [t.text for t in tokenize.tokens(word, self.stopwords, search_mode=False)]
        return found[0] if len(found) == 1 else None

    def variants(self, term: str) -> frozenset[str]:
        """The term and every glossary equivalent of it (one step, not transitive)."""
        return self._table.get(term, frozenset((term,)))

    def unusable_entries(self) -> list[str]:
        return [w for words in self.groups for w in words if self.entry_token(w) is None]

    def glossary_tokens(self) -> frozenset[str]:
        return frozenset(self._table)
