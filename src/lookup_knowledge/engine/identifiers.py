"""Technical identifiers a query names, looked up among the terms of its corpus.

An alert, a Kubernetes kind, a metric, a config key or an error code (`PodDisruptionBudget`,
`probe_ssl_earliest_cert_expiry`, `NOT_LEADER_OR_FOLLOWER`) names one specific thing. The
tokens split it into parts (`pod`, `disruption`, `budget`), and a corpus that documents
something else may hold most of those parts: a question about a Pod Disruption Budget then
looks half answered by any page about pods. So each identifier the query names (which ones
count: below) is looked up whole (`engine.index`):

* **held** — the corpus's vocabulary holds it, as such or inside a longer identifier
  (`pid_max` in `kernel.pid_max`, `ShardsMissing` in `KubeStateMetricsShardsMissing`), the
  separators aside: nothing changes;
* **near** — it is a misspelling (at most two edits, for 8 letters or more) or an
  abbreviation (its letters, in order, from a corpus identifier that starts with the same
  letter and is at most `ABBREVIATION_STRETCH` times as long: `KubeMemOvercommit` for
  `KubeMemoryOvercommit`) of one: that identifier is added to the query's whole identifiers,
  to the rank and to the heading terms named, as one the query pasted;
* **absent** — anything else: the query names a thing the corpus never mentions, and the
  identifier becomes a concept no chunk covers, weighing `query.ABSENT_FACTOR` times the
  rarest word's weight (`engine.query`).

Besides CamelCase and snake_case, a name of three or more lower-case parts joined by hyphens
(`wait-control-plane`, `node-problem-detector`) and a command-line flag (`--rotate-certificates`)
are identifiers; two hyphenated words are not: in prose they are mostly compound words
(`long-term`, `self-signed`), and cluster objects are named that way (`checkout-api`), so
their absence from a corpus proves nothing. An identifier with a digit is left out (a
version, a pod's hash: log noise), and so is one inside a path, a URL or a dotted name
(`o.h.e.j.s.SqlExceptionHelper`, `pod_workers.go`), whose parts say more than the whole.
The index looks for them in the query without its log structure
(`tokenize.strip_log_structure`): a structured line's keys (`remote_name=`) are the logger's
schema, not the question's subject.

A name typed as one word without its case (`kubememoryovercommit`, `kubememovercommit`, as
people type alert names into a search box) would be one plain word: a concept no CamelCase
splits, so a page that is all about it would cover one concept of the question and no more.
`CasedNames` gives such a word (`SQUASHED_MIN_LETTERS` letters or more) back its case from
the identifiers of the corpus's titles and file names, when it spells one or, being no word
the corpus or the dictionary knows, misspells or shortens one; the query is then read as if
it had been typed so.

The candidates for a near match are found through their character bigrams, as typos are
(`engine.fuzzy`). The table is built by the first query that names an identifier the
corpus's vocabulary lacks: about 80 ms and 6 MB for 10,000 documents (30,000 terms); a
look-up then takes about a millisecond there.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable, Sequence

import numpy as np

from lookup_knowledge.engine.fuzzy import damerau_levenshtein

_EDGE_BEFORE = r"(?<![A-Za-z0-9_./:-])"
_EDGE_AFTER = r"(?![A-Za-z0-9_/]|\.[A-Za-z0-9])"
# snake_case (two parts or more, any case), CamelCase (a capital after a lowercase letter, or
# a block of capitals before a capitalised word: `useEffect`, `ImagePullBackOff`,
# `DNSPolicy`) or kebab-case of three parts or more; a plain capitalised word (`Kafka`), an
# acronym (`HPA`) or its plural (`PVCs`, `IPs`: `tokenize` reads them as the acronym) is no
# identifier.
_IDENTIFIER = re.compile(
    _EDGE_BEFORE
    + r"(?:[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+"
    + r"|[A-Za-z]*[a-z][A-Z][A-Za-z0-9]*"
    + r"|[A-Z]{2,}(?!s(?![A-Za-z0-9]))[a-z][A-Za-z0-9]*"
    + r"|[a-z][a-z0-9]*(?:-[a-z][a-z0-9]*){2,})"
    + _EDGE_AFTER
)
_FLAG = re.compile(r"(?<![A-Za-z0-9_-])--([a-z][a-z0-9]*(?:-[a-z][a-z0-9]*)+)" + _EDGE_AFTER)
_DROP = str.maketrans("", "", "._:/-")
# A stretch of the characters an identifier, a path or a URL is made of: each is searched
# apart, so the edges above see its ends.
_RUN = re.compile(r"[A-Za-z0-9_./:-]+")
MAX_LETTERS = 100  # longer runs are no name
TYPO_MIN_LETTERS = 8  # shorter identifiers are too close to too many others
TYPO_DISTANCE = 2
ABBREVIATION_MIN_LETTERS = 6
ABBREVIATION_STRETCH = 1.6
CANDIDATES = 40
SQUASHED_MIN_LETTERS = 10  # a plain word this long may be a name typed without its case
_SQUASHED = re.compile(_EDGE_BEFORE + rf"[A-Za-z]{{{SQUASHED_MIN_LETTERS},}}" + _EDGE_AFTER)


def named(text: str) -> list[str]:
    """The identifiers of `text`, lowercased, once each: CamelCase, snake_case and longer
    kebab-case ones in order, then command-line flags (without their dashes). A run of
    Latin characters longer than `MAX_LETTERS` is no name (a paste, a hash, noise) and is
    not searched, which also keeps a pathological query cheap."""
    found: list[str] = []
    for run in _RUN.findall(text):
        if len(run) <= MAX_LETTERS + 2:  # room for a flag's dashes
            found += [m.group().lower() for m in _IDENTIFIER.finditer(run)]
            found += [m.group(1) for m in _FLAG.finditer(run)]
    return list(dict.fromkeys(w for w in found if not any(c.isdigit() for c in w)))


def flat(identifier: str) -> str:
    """An identifier without its separators: `pid_max` → `pidmax`."""
    return identifier.translate(_DROP)


class CorpusIdentifiers:
    """Which identifiers a corpus holds, and the one a misspelt or shortened name stands for."""

    def __init__(self, terms: Sequence[str]) -> None:
        """`terms`: the corpus's vocabulary (its Latin terms are used, when the first query
        needs them: the index's build does no work for this)."""
        self._terms = terms
        self._lock = threading.Lock()
        self._table: _Table | None = None

    def holds(self, identifier: str) -> bool:
        """Whether some corpus term is or contains the identifier, separators aside."""
        return flat(identifier) in self._get().joined

    def nearest(self, identifier: str) -> str | None:
        """The corpus term the identifier misspells or abbreviates (the closest), or None."""
        wanted = flat(identifier)
        if len(wanted) < ABBREVIATION_MIN_LETTERS:
            return None
        return self._get().nearest(wanted)

    def _get(self) -> _Table:
        table = self._table
        if table is None:
            with self._lock:
                if self._table is None:
                    self._table = _Table([t for t in self._terms if t.isascii()])
                table = self._table
        return table


class _Table:
    """The corpus's terms without separators, joined for `in`, and a bigram index of the
    longer ones: for each character pair (with start and end markers), the terms holding it,
    built with array operations (tens of milliseconds for 30,000 terms)."""

    def __init__(self, terms: list[str]) -> None:
        flats = [flat(t) for t in terms]
        self.joined = "\0" + "\0".join(flats) + "\0"
        keep = [i for i, f in enumerate(flats) if len(f) >= ABBREVIATION_MIN_LETTERS]
        self._terms = [terms[i] for i in keep]
        self._flats = [flats[i] for i in keep]
        padded = np.frombuffer("".join(f"^{f}$" for f in self._flats).encode("ascii"), np.uint8)
        sizes = [len(f) + 2 for f in self._flats]
        owner = np.repeat(np.arange(len(self._flats), dtype=np.int64), sizes)
        first = np.flatnonzero(padded[:-1] != ord("$"))  # a pair inside one term
        owner = owner[first]
        codes = padded[first].astype(np.int32) * 256 + padded[first + 1]
        pairs = np.sort(codes.astype(np.int64) << 32 | owner)
        if len(pairs):
            pairs = pairs[np.concatenate(([True], pairs[1:] != pairs[:-1]))]  # each pair once
        self._codes = (pairs >> 32).astype(np.int32)
        self._owners = (pairs & 0xFFFFFFFF).astype(np.int32)

    def nearest(self, wanted: str) -> str | None:
        if not self._flats:
            return None
        padded = f"^{wanted}$".encode("ascii", "replace")
        codes = np.unique([padded[i] * 256 + padded[i + 1] for i in range(len(padded) - 1)])
        left = np.searchsorted(self._codes, codes, side="left")
        right = np.searchsorted(self._codes, codes, side="right")
        held = [self._owners[a:b] for a, b in zip(left.tolist(), right.tolist(), strict=True)]
        overlap = np.bincount(np.concatenate(held), minlength=len(self._flats))
        count = min(CANDIDATES, int(np.count_nonzero(overlap)))
        if count == 0:
            return None
        best: tuple[int, int, str] | None = None
        for position in np.argpartition(-overlap, count - 1)[:count].tolist():
            candidate = self._flats[position]
            cost = _cost(wanted, candidate)
            if cost is not None:
                key = (cost, len(candidate), self._terms[position])
                best = key if best is None or key < best else best
        return best[2] if best is not None else None


def _cost(wanted: str, candidate: str) -> int | None:
    """How far `candidate` is from `wanted` as its misspelling (the edits) or its
    abbreviation (beyond the typos: the letters left out), or None when it is neither."""
    if candidate == wanted:
        return None
    if len(wanted) >= TYPO_MIN_LETTERS and abs(len(candidate) - len(wanted)) <= TYPO_DISTANCE:
        distance = damerau_levenshtein(wanted, candidate, TYPO_DISTANCE)
        if distance <= TYPO_DISTANCE:
            return distance
    if (
        candidate[0] == wanted[0]
        and len(wanted) < len(candidate) <= ABBREVIATION_STRETCH * len(wanted)
        and _in_order(wanted, candidate)
    ):
        return TYPO_DISTANCE + len(candidate) - len(wanted)
    return None


def _in_order(letters: str, word: str) -> bool:
    """Whether `letters` are letters of `word`, in the same order."""
    rest = iter(word)
    return all(letter in rest for letter in letters)


class CasedNames:
    """The identifiers of a corpus's titles and file names as written (`KubeMemoryOvercommit`),
    by their letters in lower case, to give a query word typed without case its case back."""

    def __init__(self, titles: Iterable[str]) -> None:
        """`titles`: each document's title and file name (read when the first query needs
        them: the index's build does no work for this)."""
        self._titles = titles
        self._lock = threading.Lock()
        self._table: dict[str, str] | None = None

    def restore(
        self,
        text: str,
        nearest: Callable[[str], str | None],
        unknown: Callable[[str], bool],
    ) -> str:
        """`text` with each plain word that spells a title's identifier written as it, and each
        one that `unknown` says the corpus and the dictionary lack written as the identifier
        it misspells or shortens (`nearest`: the corpus term, or None), when a title has it."""
        if _SQUASHED.search(text) is None:
            return text
        table = self._get()

        def cased(match: re.Match[str]) -> str:
            word = match.group()
            if len(word) > MAX_LETTERS or _IDENTIFIER.fullmatch(word):
                return word  # no name (a paste, a hash), or has its case already
            lowered = word.lower()
            found = table.get(lowered)
            if found is None and unknown(lowered):
                term = nearest(lowered)
                found = table.get(flat(term)) if term is not None else None
            return found or word

        return _SQUASHED.sub(cased, text)

    def _get(self) -> dict[str, str]:
        table = self._table
        if table is None:
            with self._lock:
                if self._table is None:
                    found: dict[str, str] = {}
                    for title in self._titles:
                        for run in _RUN.findall(title):
                            for match in _IDENTIFIER.finditer(run):
                                name = match.group()
                                found.setdefault(flat(name.lower()), name)
                    self._table = found
                table = self._table
        return table
