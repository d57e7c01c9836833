"""Tokens of mixed Chinese/English operations text: words, identifier parts, noise stripped.

Text is NFKC-normalized (full-width → half-width), then cut into runs:

* **CJK runs** are segmented by jieba's dictionary (through rjieba, the Rust port: the same
  dictionary, loaded in a fraction of the time). Documents use search mode (every word plus its
  dictionary sub-words, so `连接池` also yields `连接`); queries use precise mode (one token per
  word). `dictionary_words` re-reads a query word without jieba's HMM guesses.
* **Latin runs** are identifier-aware: letters and digits joined by `. _ - : /` form one
  compound (`fs.inotify.max_user_watches`, `kube-proxy`, `KubePodCrashLooping`). A compound
  yields its parts, split at separators and at CamelCase boundaries (`Kube`, `Pod`, `Crash`,
  `Looping`), lowercased and stemmed, and — when it has several parts — the whole, lowercased
  and unstemmed (`kubepodcrashlooping`), so both an abbreviation inside a name and the exact
  name are found.
* **Log noise** never becomes a token: timestamps, dates and times, IP addresses with or
  without a port, UUIDs, hexadecimal ids (`7f9c6d5b8`, `0x104020`), numbers of five or more
  digits and decimals. Short numbers stay (`137`, `429`, `504` are exit and status codes).
  The query side goes further (`engine.query`): a query token with a digit that the corpus
  does not know is an id and weighs nothing. The ordinals that number headings and list
  items (`### 2. Look at sessions`, `1) restart`) are no tokens, in documents and queries alike.

Stopwords (`engine.lexicon`) are dropped before stemming. The stemmer is Snowball's English
stemmer (PyStemmer), applied to documents, queries and glossary entries alike, so stems only
have to be consistent, not words.
"""

from __future__ import annotations

import functools
import itertools
import re
import unicodedata
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from typing import Any

# CJK ideographs (extension A, the unified block, compatibility), as code point ranges.
CJK_RANGES = ((0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF))
_CJK = "".join(f"{chr(low)}-{chr(high)}" for low, high in CJK_RANGES)
CJK_CLASS = _CJK  # those ranges as the inside of a regex character class, for other modules
# A CJK run, or a Latin compound: word characters joined by single . - : / separators.
_RUNS = re.compile(rf"(?P<cjk>[{_CJK}]+)|(?P<word>[^\W{_CJK}]+(?:[.\-:/][^\W{_CJK}]+)*)")
_CJK_WORD = re.compile(rf"[{_CJK}]+")
_DIGIT = re.compile(r"\d")
RUN = re.compile(rf"[{_CJK}]+|[^\W{_CJK}]+(?:[.\-:/][^\W{_CJK}]+)*")  # _RUNS, ungrouped
_SEPARATORS = re.compile(r"[._\-:/]+")
# A case change inside a word: `podName`, `HTTPServer`; but not the plural `s` of capitals
# (`PVCs`, `IPs`, `CRDs`), which is no word of its own.
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])(?![A-Z]s(?![a-z]))")
_CAPITALS_PLURAL = re.compile(r"[A-Z]{2,}s")
_NOISE = re.compile(
    r"""
    \d{4}[-/.]\d{1,2}[-/.]\d{1,2}(?:[t ]?\d.*)?     # dates, ISO timestamps
    | \d{1,2}:\d{2}(?::\d{2})?(?:[.,]\d+)?[a-z]*     # times of day
    | \d{1,3}(?:\.\d{1,3}){3}(?::\d+)?(?:/\d+)?      # IPv4, with port or prefix
    | [0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}  # UUID
    | 0x[0-9a-f]+                                    # hex literal
    | (?=[a-f]*\d)(?=\d*[a-f])[0-9a-f]{6,}           # hex id: digits and a-f letters
    | \d{5,}                                         # long numbers (pids, ids, sizes)
    | \d+[.,]\d+[a-z]{0,3}                           # decimals, with a unit
    """,
    re.VERBOSE,
)


# Log structure that names where or how a line was logged, never what happened.
_KLOG_HEADER = re.compile(r"\b[IWEF]\d{4} \d{2}:\d{2}:\d{2}\.\d+\s+\d+\s+[\w./@-]+:\d+\]")
# A clock date spelt with names (ctime, dmesg -T, syslog, HTTP): `Tue Jun 11 02:41:07 2024`,
# `Jun 11 02:41:07`, `Tue, 11 Jun 2024 02:41:07 GMT`. The time is required: `may 11` is prose.
_MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?"
_NAMED_DATE = re.compile(
    rf"""
    \b(?:(?:mon|tue|wed|thu|fri|sat|sun)[a-z]*,?\s+)?
    (?:{_MONTH}\s+\d{{1,2}}|\d{{1,2}}\s+{_MONTH}(?:\s+\d{{4}})?),?
    \s+\d{{1,2}}:\d{{2}}(?::\d{{2}})?(?:[.,]\d+)?
    (?:\s+\d{{4}}\b)?(?:\s+(?:utc|gmt)\b)?
    """,
    re.VERBOSE | re.IGNORECASE,
)
# A time zone named after a clock time (`09:40 UTC`, `07:58 CEST`, `14:05 (CET)`, `3pm PST`):
# when the line or the report was written, as the time is; as words, `cest` and `west` are
# typos of `best` and words the corpus lacks.
_ZONE = (
    r"utc|gmt|cet|cest|eet|eest|wet|west|bst|ist|msk|pst|pdt|mst|mdt|cst|cdt|est|edt|akst"
    r"|akdt|hst|jst|kst|sgt|hkt|awst|acst|acdt|aest|aedt|nzst|nzdt"
)
_ZONED_TIME = re.compile(
    rf"(\b\d{{1,2}}(?::\d{{2}}){{1,2}}(?:[.,]\d+)?|\b\d{{1,2}}\s*[ap]\.?m\.?)"
    rf"\s*\(?(?:{_ZONE})\b\)?(?:[+-]\d{{1,2}}(?::?\d{{2}})?)?",
    re.IGNORECASE,
)
# A syslog header (RFC 3164): `Mar  3 04:18:22 node-3 kernel:`, `Nov 19 11:20:33 worker-12
# kubelet[2214]:`. The date, the host that logged the line and the program's pid go; the
# program stays (which component logged it is part of what happened).
_SYSLOG_HEADER = re.compile(
    rf"\b{_MONTH}\s+\d{{1,2}}\s+\d{{1,2}}:\d{{2}}:\d{{2}}\s+[\w.\-]+\s+"
    r"(?P<program>[\w./\-]+)(?:\[\d+\])?:(?=\s|$)",
    re.IGNORECASE,
)
# Both start only where a run of their characters starts: a search from every position of a
# long run (a 4000-character paste) would take time quadratic in its length.
_SOURCE_LOCATION = re.compile(
    r"(?<![\w./@-])[\w./@-]*\.(?:go|py|java|kt|scala|js|ts|rb|rs|c|cc|cpp|h|cs|php|ex|erl):\d+\b"
)
_URL_AUTHORITY = re.compile(r"(?<![a-z0-9+.-])[a-z][a-z0-9+.-]*://[^\s/\"'\]\)]+", re.IGNORECASE)
_LOG_KEY = re.compile(r"(?:(?<![\w.\-])[A-Za-z_][\w.\-]*(?==\S)=)|(?:\"[A-Za-z_][\w.\-]*\"\s*:)")
LOG_KEYS_MIN = 2  # key=value pairs that make a text a structured log line
_LOG_LEVEL = re.compile(
    r"(?:(?<![\w.\-])(?:level|lvl|severity)=\"?[A-Za-z]+\"?)"
    r"|(?:\"(?:level|lvl|severity)\"\s*:\s*\"[A-Za-z]+\")",
    re.IGNORECASE,
)


# A host name (`api.partner-pay.com.`, `ip-10-12-4-77.eu-west-1.compute.internal`): three labels
# or more under a public top-level domain, two or more under a private one. A two-label name
# under a public one is as often a product or an API group (`asp.net`, `nvidia.com/gpu`,
# `quay.io`) and is left alone.
_PUBLIC_TLD = r"(?:com|net|org|io|cn)"
_PRIVATE_TLD = r"(?:internal|local|example|corp|lan)"
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_HOST_START = r"(?<![A-Za-z0-9_@/.-])"  # bounded by ASCII only: `访问api.shop.internal超时`
_HOST_END = r"\.?(?![A-Za-z0-9_-]|\.[A-Za-z0-9])"
HOST_NAME = re.compile(
    rf"{_HOST_START}(?:(?:{_LABEL}\.){{2,}}{_PUBLIC_TLD}|(?:{_LABEL}\.)+{_PRIVATE_TLD}){_HOST_END}",
    re.IGNORECASE,
)
# A corpus's host names of any length under those domains (`k8s.io`, `svc.cluster.local`), and
# what every text holding one holds: a dot and such a domain. The hint starts with its one
# literal, so a text without one is skipped by a fast scan for dots.
# Both read lowercased text (`normalize`): case-blind matching costs a third more.
_ANY_HOST = re.compile(  # a URL's host too (`https://registry.k8s.io/v2/`)
    rf"(?<![a-z0-9_@.-])(?:{_LABEL}\.)+(?:{_PUBLIC_TLD}|{_PRIVATE_TLD}){_HOST_END}"
)
_HOST_HINT = re.compile(rf"\.(?:{_PUBLIC_TLD}|{_PRIVATE_TLD})(?![a-z0-9_-])")


def host_endings(text: str) -> set[str]:
    """Every ending of two labels or more of the host names `text` (lowercased: `normalize`)
    writes: `registry.k8s.io/pause` gives `registry.k8s.io` and `k8s.io`."""
    if _HOST_HINT.search(text) is None:
        return set()
    endings: set[str] = set()
    for match in _ANY_HOST.finditer(text):
        labels = match.group(0).rstrip(".").split(".")
        endings.update(".".join(labels[start:]) for start in range(len(labels) - 1))
    return endings


def strip_log_structure(text: str) -> str:
    """A pasted log line without what only says how it was logged (query side).

    klog headers (`E0607 12:01:55.118233  1 reflector.go:147]`), dates spelt with day and
    month names (`Tue Jun 11 02:41:07 2024`: their numbers are noise already, the names
    would be words the corpus lacks), source locations
    (`notifier.go:371`), the scheme and host of URLs, and — in a structured line with at
    least `LOG_KEYS_MIN` `key=value` or JSON `"key":` pairs — the keys (`level=`, `ts=`,
    `caller=`, `msg=`): the logger's schema, shared by every line it writes, while the values
    say what happened; but for the level's value (`level=warn`), which every line has too. A
    single `key=value` in a question is a setting and stays.
    """
    if len(_LOG_KEY.findall(text)) >= LOG_KEYS_MIN:
        text = _LOG_LEVEL.sub(" ", text)
        text = _LOG_KEY.sub(" ", text)
    text = _KLOG_HEADER.sub(" ", text)
    text = _SYSLOG_HEADER.sub(r" \g<program>: ", text)
    text = _NAMED_DATE.sub(" ", text)
    text = _ZONED_TIME.sub(r"\1 ", text)
    text = _SOURCE_LOCATION.sub(" ", text)
    return _URL_AUTHORITY.sub(" ", text)


# The ordinal that numbers a heading or a list item at the start of a line, past its indent and
# heading marks: `### 2. Check the pool`, `1) restart it`, `3、确认超时`, `1.确认超时` (Chinese
# text needs no space after the mark). Versions and addresses (`1.27 升级`, `10.0.0.1 is`) have
# no mark and a space after their last number. Read on the NFKC form (`１．`, `1.\u3000`).
_ORDINAL = re.compile(
    rf"([ \t]*(?:#{{1,6}}[ \t]+)?)[0-9]{{1,3}}(?:\.[0-9]{{1,3}})*"
    rf"(?:[.)][ \t]+|[.)](?=[{_CJK}])|、[ \t]*)"
)


# What `str.isdigit` accepts: the decimal digits (`\d`) and the other digits of Unicode
# (superscripts, subscripts, circled and parenthesized digits: `²`, `①`, `⒈`); a test checks
# this class against every code point.
DIGIT = (
    r"(?:\d|[\u00b2\u00b3\u00b9\u1369-\u1371\u19da\u2070\u2074-\u2079\u2080-\u2089"
    r"\u2460-\u2468\u2474-\u247c\u2488-\u2490\u24ea\u24f5-\u24fd\u24ff\u2776-\u277e"
    r"\u2780-\u2788\u278a-\u2792\U00010a40-\U00010a43\U00010e60-\U00010e68"
    r"\U00011052-\U0001105a\U0001f100-\U0001f10a])"
)
# A line that starts, past its indent and heading marks, with a digit: one that may be numbered.
# Searched in "\n" + the text: a pattern that starts with a literal is looked for by a fast
# scan for it, where `^` under MULTILINE is tried at every position.
_NUMBERED_LINE = re.compile(rf"\n[ \t#\u3000]*{DIGIT}")


def strip_enumeration(text: str) -> str:
    """`text` without the ordinals that number its headings and list items (a document's, and
    a query's as pasted from one): they say where a step stands, not what it is about, so `2`
    is no word of the section `2. Look at sessions on the database`. Line by line: a regex
    over the whole text would try every digit of it; a text with no line that starts with a
    digit (most chunks) is returned as it is, after one scan in C."""
    if _NUMBERED_LINE.search("\n" + text) is None:
        return text
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if not line.lstrip(" \t#\u3000")[:1].isdigit():
            continue
        line = unicodedata.normalize("NFKC", line)  # as the tokens will read it
        if (match := _ORDINAL.match(line)) is not None:
            lines[i] = match.group(1) + line[match.end() :]
    return "\n".join(lines)


def normalize(text: str) -> str:
    return unicodedata.normalize("NFKC", text).lower()


def is_cjk_word(token: str) -> bool:
    return _CJK_WORD.fullmatch(token) is not None


_CJK_NUMERALS = frozenset("〇零一二三四五六七八九十百千万亿两几多余来半")
# Measure words and units that follow a count (`两百多个`, `十几秒`, `一千多台`).
_CJK_MEASURES = frozenset("个台次秒分天年月周号条遍倍位名人块张套页")


def is_cjk_count(word: str) -> bool:
    """Whether a CJK word is a count: numerals (`二十多`, `几十`, `两百`), perhaps followed by
    a measure word or a unit (`两百多个`, `十几秒`, `一千多台`)."""
    body = word[:-1] if len(word) > 1 and word[-1] in _CJK_MEASURES else word
    return bool(body) and all(c in _CJK_NUMERALS for c in body)


def has_cjk(text: str) -> bool:
    return _CJK_WORD.search(text) is not None


def has_digit(token: str) -> bool:
    return any(ch.isdigit() for ch in token)


def latin_runs(text: str) -> list[str]:
    """The lowercased Latin runs of `text` (words, numbers, addresses, identifiers), in
    order, each once; a run with a port or a suffix after its last `:` also yields what
    stands before it (`10.0.5.23:6379` → `10.0.5.23`)."""
    found: dict[str, None] = {}
    for match in _RUNS.finditer(unicodedata.normalize("NFKC", text)):
        if match.lastgroup == "word":
            run = match.group().lower()
            found[run] = None
            if ":" in run:
                found[run.rsplit(":", 1)[0]] = None
    return list(found)


# The noise a page may document: addresses (`169.254.20.10`, `0.0.0.0:10249`) and long
# numbers (ports, codes). Not dates, times, decimals or hex ids: when a line was logged, what
# it measured and which instance logged it belong to the incident, not to a runbook.
_DOCUMENTED_NOISE = re.compile(r"\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?(?:/\d+)?|\d{5,}")
# What every such run holds: a digit, a dot, a digit, or five digits in a row. Most texts
# hold neither, and one search for it costs a fraction of cutting the text into runs. Written
# to start with its one first character, the search skips to digits (a fourth of the time
# `\d\.\d|\d{5}` takes: it tries both branches at every position).
_DOCUMENTED_NOISE_HINT = re.compile(r"\d(?:\.\d|\d{4})")


# A Latin run (`_RUNS`' word) that starts with a digit: no word character or joined
# separator before it. Every run `noise_runs` keeps starts so, and its prefix before a `:`
# too; finding only those skips the letters, Chinese and markup that make most of a page.
# The digit comes first and the look back after it, so that the search skips to digits.
_DIGIT_RUN = re.compile(
    rf"\d(?<![^\W{_CJK}].)(?<![^\W{_CJK}][.\-:/].)[^\W{_CJK}]*(?:[.\-:/][^\W{_CJK}]+)*"
)


def noise_runs(text: str) -> list[str]:
    """The Latin runs of `text` (`latin_runs`) that are log noise a page may document as a
    whole: an address with or without its port, a long number. The tokens leave them out;
    the index keeps them by chunk, and a query's run the corpus holds is evidence
    (`engine.query`). `text` is in NFKC already (`normalize`): the index normalizes each chunk
    once."""
    if _DOCUMENTED_NOISE_HINT.search(text) is None:
        return []
    found: dict[str, None] = {}
    for match in _DIGIT_RUN.finditer(text):
        run = match.group().lower()
        for whole in (run, run.rsplit(":", 1)[0]) if ":" in run else (run,):
            if _DOCUMENTED_NOISE.fullmatch(whole):
                found[whole] = None
    return list(found)


def is_noise(token: str) -> bool:
    """Whether a lowercased compound or part is log noise (ids, times, addresses, numbers)."""
    # Every kind of noise holds a digit; most words hold none (a cheap test first).
    return _DIGIT.search(token) is not None and _NOISE.fullmatch(token) is not None


@dataclass(frozen=True, slots=True)
class Token:
    text: str
    whole: bool = False  # the whole of a multi-part compound (recall and ranking only)
    raw: str = ""  # the lowercased word before stemming (Latin words only)


def tokens(text: str, stopwords: Collection[str], *, search_mode: bool) -> Iterator[Token]:
    """Tokens of `text` in order; `search_mode` adds dictionary sub-words of CJK words."""
    segment = _segmenter().cut_for_search if search_mode else _segmenter().cut
    for match in _RUNS.finditer(unicodedata.normalize("NFKC", text)):
        run = match.group()
        if match.lastgroup == "cjk":
            yield from (Token(w) for w in segment(run) if w not in stopwords)
        else:
            yield from compound(run, frozenset(stopwords))


@functools.lru_cache(maxsize=262144)
def compound(run: str, stopwords: frozenset[str]) -> tuple[Token, ...]:
    """The tokens of one Latin compound (cached: real text repeats its words)."""
    lowered = run.lower()
    if is_noise(lowered):
        return ()
    parts = [p for piece in _SEPARATORS.split(run) for p in _CAMEL.split(piece) if p]
    found = []
    for part in parts:
        word = part.lower()
        if word in stopwords or is_noise(word):
            continue
        if _CAPITALS_PLURAL.fullmatch(part):  # `PVCs` is `pvc`, as `nodes` is `node`
            found.append(Token(word[:-1], raw=word))
            continue
        found.append(Token(stem(word), raw=word))
    if len(parts) > 1:
        found.append(Token(lowered, whole=True))
    return tuple(found)


INNER_MAX_PARTS = 8  # an identifier of more parts is a path or a class name: its parts say it
INNER_MIN_LETTERS = 5  # a shorter join is a unit or an abbreviation (`M/s`, `DDoS`), no word


@functools.lru_cache(maxsize=65536)
def inner_compounds(run: str) -> tuple[str, ...]:
    """The compounds a Latin identifier holds inside it, each written as one word: every two
    neighbouring alphabetic parts, joined and stemmed (`KubeDaemonSetMisScheduled` →
    `daemonset`, `misschedul`, `setmis`, …; `CrashLooping` → `crashloop`; `node-exporter`
    → `nodeexport`). These are candidates only: the index keeps those the corpus also writes
    as words of their own (`engine.bags`), so that a question's `daemonset` or `crashlooping`
    finds the page whose name says `DaemonSet` or `CrashLooping`
    (docs/retrieval.md#tokens)."""
    parts = [p.lower() for piece in _SEPARATORS.split(run) for p in _CAMEL.split(piece) if p]
    if not 2 <= len(parts) <= INNER_MAX_PARTS:
        return ()
    found: dict[str, None] = {}
    for first, second in itertools.pairwise(parts):  # two parts: linear in the identifier
        joined = first + second
        if not joined.isalpha() or len(first) < 2 or len(second) < 2:
            continue  # a part with a digit (`v1`), or a letter (`I/O`): no word runs across it
        if len(joined) >= INNER_MIN_LETTERS:
            found[stem(joined)] = None
    return tuple(found)


def dictionary_words(word: str, stopwords: Collection[str]) -> list[str]:
    """A CJK query word re-read with jieba's dictionary alone (no HMM), stopwords dropped.

    jieba's HMM guesses words its dictionary lacks, which is right for `回滚` or `丢包` but
    sometimes glues a function character onto a neighbour (`怀疑有大 key` → `有大`) or two
    unrelated characters together (`集群变黄` → `变黄`).
    """
    return [w for w in _segmenter().cut_dictionary_only(word) if w not in stopwords]


def tiling(word: str, parts: Collection[str]) -> list[str] | None:
    """`word` written as a sequence of `parts` of two characters or more, if it is one (the
    fewest parts); None if not (`错误信息` of {`错误`, `信息`}; not `十分钟` of {`十分`, `分钟`},
    which overlap)."""
    best: list[list[str] | None] = [[]] + [None] * len(word)
    for end in range(2, len(word) + 1):
        for begin in range(end - 1):
            before, piece = best[begin], word[begin:end]
            if (
                before is not None
                and piece in parts
                and (best[end] is None or len(before) + 1 < len(best[end] or ()))
            ):
                best[end] = [*before, piece]
    return best[len(word)]


def cjk_runs(text: str) -> list[str]:
    """The runs of CJK characters of `text`, in order."""
    return _CJK_WORD.findall(unicodedata.normalize("NFKC", text))


def segment(run: str) -> list[str]:
    """jieba's precise-mode words of a CJK run, stopwords kept (they are all its characters)."""
    return _segmenter().cut(run)


def segment_for_search(text: str) -> list[str]:
    """jieba's search-mode words of `text` (CJK runs separated by any other character)."""
    return _segmenter().cut_for_search(text)


def cjk_bigrams(word: str) -> list[str]:
    """Overlapping character pairs of a CJK word (the word itself when it has one character)."""
    if len(word) < 2:
        return [word]
    return [word[i : i + 2] for i in range(len(word) - 1)]


@dataclass(frozen=True, slots=True)
class _Segmenter:
    cut: Callable[[str], list[str]]
    cut_for_search: Callable[[str], list[str]]
    cut_dictionary_only: Callable[[str], list[str]]


@functools.cache
def _segmenter() -> _Segmenter:
    """Load the Chinese segmenter once per process."""
    import rjieba

    module: Any = rjieba
    return _Segmenter(module.cut, module.cut_for_search, lambda text: module.cut(text, False))


def warm_up() -> None:
    """Load the segmenter and the stemmer now (the first index build does it otherwise)."""
    _segmenter().cut("预热")
    stem("warming")


INFLECTION_MIN_LETTERS = 5  # shorter words have too few letters to tell a suffix from a stem
_VOWELS = frozenset("aeiouy")


def inflected_stems(word: str) -> tuple[str, ...]:
    """The stems of the other inflections of a lowercased English word, its own stem left out.

    Snowball stems some inflections of one word apart (`rebalances` → `rebal`, `rebalancing`
    → `rebalanc`), so a query word whose own stem the corpus lacks is also looked for under
    these: the bases it may come from (`-ing`, `-ed`, `-es`, `-s` taken off, with the `e` the
    suffix took or a doubled consonant undone, `i` back to `y`), and each base's regular
    inflections. English's regular inflections only: no derivation (`store` is not
    `storage`), nothing for words of under `INFLECTION_MIN_LETTERS` letters."""
    if len(word) < INFLECTION_MIN_LETTERS or not word.isalpha() or not word.isascii():
        return ()
    bases = [word]  # a base form, unless a suffix comes off
    for suffix in ("ing", "ed", "es", "s"):
        base = word.removesuffix(suffix)
        if base == word or len(base) < 3:
            continue
        bases = [base]
        if suffix != "s":
            bases.append(base + "e")  # rebalancing → rebalance, caches → cache
        if suffix in ("ing", "ed") and len(base) > 3 and base[-1] == base[-2]:
            bases.append(base[:-1])  # running → run
        if suffix in ("ed", "es") and base.endswith("i"):
            bases.append(base[:-1] + "y")  # retried → retry
        break
    forms: list[str] = []
    for base in bases:
        sibilant = base.endswith(("s", "x", "z", "ch", "sh"))
        forms.append(base + ("es" if sibilant else "s"))
        forms.append((base[:-1] if base.endswith("e") else base) + "ing")
        forms.append(base + ("d" if base.endswith("e") else "ed"))
        if base.endswith("y") and base[-2] not in _VOWELS:
            forms += [base[:-1] + "ies", base[:-1] + "ied"]
    own = stem(word)
    return tuple(dict.fromkeys(s for s in map(stem, [*bases, *forms]) if s != own))


@functools.cache
def _stemmer() -> Any:
    import Stemmer

    return Stemmer.Stemmer("english")


@functools.lru_cache(maxsize=131072)
def stem(word: str) -> str:
    """Snowball's English stem of a lowercased word; words with digits are kept as they are."""
    if len(word) <= 3 or not word.isalpha() or not word.isascii():
        return word
    result: str = _stemmer().stemWord(word)
    return result
