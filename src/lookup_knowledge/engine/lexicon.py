"""Stopwords, the Chinese↔English glossary, the ops thesaurus, the discourse words, the
placeholders, the pointer words and the set-up and symptom phrases: data files shipped with
the package, plus a deployment's own.

The shipped lists live in `engine/data/` (`stopwords-en.txt`, `stopwords-zh.txt`,
`glossary.txt`, `thesaurus.txt`, `discourse.txt`, `placeholders.txt`, `pointers.txt`,
`tasks.txt`, `symptoms.txt`). A
deployment that indexes its own folder (`PYRAG_DOCS_DIR`) extends them with files in that
folder's `.lexicon/` subfolder (never indexed: the engine skips dot-folders):

* `.lexicon/stopwords.txt` — more stopwords, whitespace-separated;
* `.lexicon/glossary.txt` — more equivalence groups, one per line;
* `.lexicon/thesaurus.txt` — more thesaurus lines (`lay words, more lay words = technical
  term, other term`);
* `.lexicon/discourse.txt` — more discourse words (a query of these alone names nothing:
  `engine.query`), and `-word` to take a shipped one out;
* `.lexicon/placeholders.txt` — more placeholder phrases, one per line (a chunk that says
  only one of these, `TODO`, is not indexed: `engine.placeholders`);
* `.lexicon/pointers.txt` — more pointer words, whitespace-separated (a page whose words
  besides its one link are all of these only points elsewhere: `engine.redirects`);
* `.lexicon/tasks.txt`, `.lexicon/symptoms.txt` — more set-up and symptom phrases, one per
  line (a set-up question without a symptom is graded at most `REFERENCE`: `engine.cues`).

In every file `#` starts a comment. Stopwords are function words and fillers: a query is
about its content words. Glossary groups say which words mean the same thing across
languages (`内存 memory`); a query term counts as covered when a chunk holds it or one of its
equivalents, and recall looks for all of them. An entry is read the way a query is (stemmed,
lowercased); an entry that is not one query token could never match one and is reported by
`unusable_entries` (a test keeps the shipped glossary free of them).

The thesaurus is not a set of equivalences but a one-way bridge from how people describe an
operations problem to the words the documents use: `node agent = kubelet`, `挂掉 = crash,
退出`. A line's left side lists lay expressions (`,`-separated), its right side the technical
terms they stand for. A Latin expression matches a query that says its words in order, with
at most `GAP` other words between them (read as a query's words are: stemmed, stopwords
dropped); a Chinese one matches a query that holds it verbatim (a segmenter cuts colloquial
phrases unpredictably). An expression of several words that reads as one (`not scheduled` →
`schedul`: negations and function words are stopwords) would match far more than it says,
and is unusable. How a match counts is `engine.query`'s and `engine.index`'s business
(docs/retrieval.md#an-ops-thesaurus).
"""

from __future__ import annotations

import bisect
import importlib.resources
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from lookup_knowledge.engine import fuzzy, tokenize
from lookup_knowledge.engine.cues import Cues
from lookup_knowledge.engine.placeholders import Placeholders

LEXICON_DIR = ".lexicon"
STOPWORD_FILES = ("stopwords-en.txt", "stopwords-zh.txt")
GLOSSARY_FILE = "glossary.txt"
THESAURUS_FILE = "thesaurus.txt"
DISCOURSE_FILE = "discourse.txt"
PLACEHOLDERS_FILE = "placeholders.txt"
POINTERS_FILE = "pointers.txt"
TASKS_FILE = "tasks.txt"
SYMPTOMS_FILE = "symptoms.txt"
DEPLOYMENT_STOPWORDS = "stopwords.txt"
GAP = 2  # other tokens a query may put between the words of a lay expression
_LATIN_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?|\d+")


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
class Bridge:
    """One lay expression of a thesaurus line and the technical terms it stands for."""

    words: tuple[str, ...]  # the expression's query tokens (Latin), in order
    verbatim: str  # the normalized expression, when it is Chinese: found in the query's text
    terms: tuple[str, ...]  # the query tokens of the line's technical side

    def matches(self, at: Mapping[str, Sequence[int]], text: str) -> bool:
        """Whether a query says this expression: its words in order among the query's tokens
        (`at`: where each stands, `positions`), each the first of its places after the one
        before, at most `GAP` other tokens between them in all ("disk attached to our
        statefulset"), or (Chinese) verbatim in its normalized, space-free `text`."""
        if self.verbatim:
            return self.verbatim in text
        words = self.words
        for start in at.get(words[0], ()):
            place, reach = start, start + len(words) + GAP
            for word in words[1:]:
                places = at.get(word, ())
                k = bisect.bisect_right(places, place)
                if k == len(places) or places[k] >= reach:
                    break
                place = places[k]
            else:
                return True
        return False


def positions(sequence: Sequence[str]) -> dict[str, list[int]]:
    """Where each token of a query stands, in order."""
    at: dict[str, list[int]] = {}
    for place, token in enumerate(sequence):
        at.setdefault(token, []).append(place)
    return at


@dataclass(frozen=True, slots=True)
class Lexicon:
    stopwords: frozenset[str]
    groups: tuple[tuple[str, ...], ...]
    bridges: tuple[Bridge, ...] = ()
    unusable_bridges: tuple[str, ...] = ()  # thesaurus lines or expressions that cannot match
    sources: tuple[str, ...] = ()  # the deployment files that were read, for the log
    # Query tokens that say what is around a question's subject, never the subject (a query of
    # these alone names nothing: `engine.query`); data/discourse.txt.
    discourse: frozenset[str] = frozenset()
    # What a section yet to be written says (`TODO`): such a chunk is not indexed
    # (`engine.placeholders`); data/placeholders.txt.
    placeholders: Placeholders = field(default_factory=Placeholders)
    # What a page that only points elsewhere says around its link (`moved`, `see`, `已迁移`):
    # `engine.redirects`; data/pointers.txt.
    pointers: frozenset[str] = frozenset()
    # Phrases of a set-up question (`how do I enable`, `怎么配置`) and of a symptom (`fail`,
    # `超时`): `set_up_question`; data/tasks.txt, data/symptoms.txt.
    tasks: Cues = field(default_factory=Cues)
    symptoms: Cues = field(default_factory=Cues)
    # Derived from the fields above (`__post_init__`): the glossary's table, the Latin bridges
    # by their first word and the Chinese ones, with their positions by first character
    # (what `said` looks through).
    _table: dict[str, frozenset[str]] = field(
        default_factory=dict, init=False, compare=False, repr=False
    )
    _by_first: dict[str, list[Bridge]] = field(
        default_factory=dict, init=False, compare=False, repr=False
    )
    _verbatim: list[Bridge] = field(default_factory=list, init=False, compare=False, repr=False)
    _verbatim_by_first: dict[str, list[int]] = field(
        default_factory=dict, init=False, compare=False, repr=False
    )
    _stopwords_by_first: dict[str, list[str]] = field(
        default_factory=dict, init=False, compare=False, repr=False
    )

    def __post_init__(self) -> None:
        self._table.update(self._build_table())
        for word in sorted(self.stopwords):
            if len(word) >= fuzzy.MIN_LENGTH and word.isascii() and word.isalpha():
                self._stopwords_by_first.setdefault(word[0], []).append(word)
        for bridge in self.bridges:
            if bridge.verbatim:
                first = self._verbatim_by_first.setdefault(bridge.verbatim[0], [])
                first.append(len(self._verbatim))
                self._verbatim.append(bridge)
            else:
                self._by_first.setdefault(bridge.words[0], []).append(bridge)

    @classmethod
    def load(cls, docs_dir: Path | None = None) -> Lexicon:
        """The shipped lists, extended by `docs_dir/.lexicon/` when it exists."""
        stop_text = [_read_shipped(name) for name in STOPWORD_FILES]
        glossary_text = [_read_shipped(GLOSSARY_FILE)]
        thesaurus_text = [_read_shipped(THESAURUS_FILE)]
        discourse_text = [_read_shipped(DISCOURSE_FILE)]
        placeholder_text = [_read_shipped(PLACEHOLDERS_FILE)]
        pointer_text = [_read_shipped(POINTERS_FILE)]
        task_text = [_read_shipped(TASKS_FILE)]
        symptom_text = [_read_shipped(SYMPTOMS_FILE)]
        sources: list[str] = []
        if docs_dir is not None:
            extra = Path(docs_dir) / LEXICON_DIR
            for name, bucket in (
                (DEPLOYMENT_STOPWORDS, stop_text),
                (GLOSSARY_FILE, glossary_text),
                (THESAURUS_FILE, thesaurus_text),
                (DISCOURSE_FILE, discourse_text),
                (PLACEHOLDERS_FILE, placeholder_text),
                (POINTERS_FILE, pointer_text),
                (TASKS_FILE, task_text),
                (SYMPTOMS_FILE, symptom_text),
            ):
                path = extra / name
                if path.is_file():
                    bucket.append(path.read_text(encoding="utf-8"))
                    sources.append(str(path))
        stopwords = frozenset(
            tokenize.normalize(w) for text in stop_text for row in _lines(text) for w in row
        )
        groups = tuple(tuple(row) for text in glossary_text for row in _lines(text) if len(row) > 1)
        bridges: list[Bridge] = []
        unusable: list[str] = []
        for text in thesaurus_text:
            for line in text.splitlines():
                line = line.split("#", 1)[0].strip()
                if line:
                    found, bad = _bridges(line, stopwords)
                    bridges.extend(found)
                    unusable.extend(bad)
        discourse = _discourse(discourse_text, stopwords)
        placeholders = Placeholders.of_lines(
            line for text in placeholder_text for line in text.splitlines()
        )
        pointers = frozenset(
            w.casefold() for text in pointer_text for row in _lines(text) for w in row
        )
        return cls(
            stopwords,
            groups,
            tuple(bridges),
            tuple(unusable),
            tuple(sources),
            discourse,
            placeholders,
            pointers,
            Cues.of_lines(line for text in task_text for line in text.splitlines()),
            Cues.of_lines(line for text in symptom_text for line in text.splitlines()),
        )

    def set_up_question(self, query: str) -> bool:
        """Whether `query` asks how to set something up and names no symptom (`engine.cues`)."""
        return self.tasks.said(query) and not self.symptoms.said(query)

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

    def misspelt_stopword(self, word: str) -> str | None:
        """The English stopword a word (lowercased, as typed) misspells, or None: the same
        first letter and within the typo reader's distance (`becuase`, `shoud`)."""
        if len(word) < fuzzy.MIN_LENGTH or not word.isascii() or not word.isalpha():
            return None
        limit = fuzzy.max_distance(word)
        for stopword in self._stopwords_by_first.get(word[0], ()):
            if (
                abs(len(stopword) - len(word)) <= limit
                and fuzzy.damerau_levenshtein(word, stopword, limit) <= limit
            ):
                return stopword
        return None

    def variants(self, term: str) -> frozenset[str]:
        """The term and every glossary equivalent of it (one step, not transitive)."""
        return self._table.get(term, frozenset((term,)))

    def said(self, sequence: Sequence[str], text: str) -> list[Bridge]:
        """The bridges whose lay expression a query says (`Bridge.matches`), in file order
        within each script: `sequence` its tokens in order, `text` normalized without spaces."""
        places = positions(sequence)  # in the order the query first says each token
        found = [
            bridge
            for token in places
            for bridge in self._by_first.get(token, ())
            if bridge.matches(places, text)
        ]
        if self._verbatim and tokenize.has_cjk(text):
            # Only the expressions that start with a character of the text can be in it.
            starts = self._verbatim_by_first
            at = sorted({i for c in set(text) for i in starts.get(c, ())})
            found += [b for b in map(self._verbatim.__getitem__, at) if b.verbatim in text]
        return found

    def unusable_entries(self) -> list[str]:
        return [w for words in self.groups for w in words if self.entry_token(w) is None]

    def glossary_tokens(self) -> frozenset[str]:
        return frozenset(self._table)


def _discourse(texts: Sequence[str], stopwords: frozenset[str]) -> frozenset[str]:
    """The discourse words of the shipped list and a deployment's: every token an entry gives
    (read as a query is), less those of entries written `-word` (a word the deployment's
    askers use for a subject: `-cluster`)."""
    added: set[str] = set()
    removed: set[str] = set()
    for text in texts:
        for row in _lines(text):
            for entry in row:
                into = removed if entry.startswith("-") else added
                words = tokenize.tokens(entry.removeprefix("-"), stopwords, search_mode=False)
                into.update(token.text for token in words)
    return frozenset(added - removed)


def _bridges(line: str, stopwords: frozenset[str]) -> tuple[list[Bridge], list[str]]:
    """The bridges of one thesaurus line (`lay, lay = term, term`), and what in it is unusable:
    the whole line without `=` or a technical term, else each lay expression that is neither
    Chinese nor a word, or whose several words read as one."""
    lay, sep, technical = line.partition("=")
    expressions = technical.split(",")
    terms = tuple(dict.fromkeys(t for e in expressions for t in _terms(e, stopwords)))
    if not sep or not terms:
        return [], [line]
    out, unusable = [], []
    for expression in (e.strip() for e in lay.split(",")):
        normalized = "".join(tokenize.normalize(expression).split())
        if normalized and tokenize.is_cjk_word(normalized):
            out.append(Bridge((), normalized, terms))
            continue
        words = tuple(
            dict.fromkeys(
                t.text
                for t in tokenize.tokens(expression, stopwords, search_mode=False)
                if not t.whole
            )
        )
        written = len(_LATIN_WORD.findall(expression))
        if not words or (written > 1 and len(words) < 2):
            unusable.append(expression)
            continue
        out.append(Bridge(words, "", terms))
    return out, unusable


def _terms(expression: str, stopwords: frozenset[str]) -> list[str]:
    """The corpus terms a technical expression names: an identifier as a whole (`kube-proxy`,
    `PersistentVolume`), not its parts, which other topics share; else its words."""
    found = list(tokenize.tokens(expression, stopwords, search_mode=False))
    wholes = [t.text for t in found if t.whole]
    return wholes or [t.text for t in found]
