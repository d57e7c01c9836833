"""Tokenization for mixed Chinese/English operations text.

Text is NFKC-normalized (full-width → half-width) and lowercased, then cut into runs:

* CJK runs are segmented with jieba's dictionary. Documents use search mode (every word plus
  its dictionary sub-words, so `连接池` also yields `连接`), queries use precise mode (one
  token per word, so each query word is counted once when scoring coverage). A precise
  query word is therefore always found in a document that contains it.
* Other runs of letters and digits are split on everything else (`max_connections` →
  `max`, `connections`), and plural endings are stripped (`timeouts` → `timeout`) — a
  deliberately tiny stemmer: it is applied to both sides, so it only has to be consistent.

Stopwords (English function words, Chinese particles and question words like `怎么`) and
punctuation are dropped.

Why jieba: it is the de-facto Chinese segmenter, its dictionary knows operations vocabulary
(`网关`, `超时`, `连接池`, `使用率`), and it needs no model download. Its one cost is start-up:
pure-Python jieba spends ~0.6-0.7 s loading its prefix dictionary, most of the one-second
indexing budget. `rjieba` (Rust bindings of jieba-rs, same dictionary, same segmentation)
loads in ~0.1 s, so it is used when installed and jieba is the fallback. Character n-grams
were the alternative: no dictionary to load, but they inflate the index and make "the share
of the query's words a chunk covers" meaningless, which the quality score relies on.
"""

from __future__ import annotations

import functools
import importlib
import logging
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_RUNS = re.compile(rf"(?P<cjk>[{_CJK}]+)|(?P<word>[^\W_{_CJK}]+)")
_CJK_WORD = re.compile(rf"[{_CJK}]+")


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


ENGLISH_STOPWORDS = _words(
    """
    a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing during each few for from
    further had has have having he her here hers him his how i if in into is it its itself
    just me more most my no nor not of on once only or other our ours over own same
    she should so some such than that the their theirs them then there these they this those
    through to too under until very was we were what when where which while who whom why
    will with would you your yours please get got need needs want
    """
)
CHINESE_STOPWORDS = _words(
    """
    的 地 得 了 着 过 是 在 和 与 及 或 也 就 都 而 把 被 让 给 对 从 向 于 为 以 之 其 这 那
    这个 那个 这些 那些 一个 一些 什么 怎么 怎样 怎么办 如何 为什么 为何 哪 哪些 哪个 吗 呢 吧
    啊 呀 嘛 我 我们 你 你们 他 她 它 他们 请 请问 能 能否 可以 会 要 应该 有 没有 很 非常 还
    又 再 已经 如果 因为 所以 但是 然后 并且 等 等等 时候 不 用
    """
)
STOPWORDS = ENGLISH_STOPWORDS | CHINESE_STOPWORDS


@dataclass(frozen=True, slots=True)
class _Segmenter:
    name: str
    cut: Callable[[str], list[str]]
    cut_for_search: Callable[[str], list[str]]


@functools.cache
def _segmenter() -> _Segmenter:
    """Load the Chinese segmenter once per process (rjieba if installed, else jieba)."""
    try:
        rjieba: Any = importlib.import_module("rjieba")
    except ImportError:
        pass
    else:
        return _Segmenter("rjieba", rjieba.cut, rjieba.cut_for_search)
    import jieba

    jieba.setLogLevel(logging.WARNING)
    jieba.initialize()
    return _Segmenter("jieba", jieba.lcut, jieba.lcut_for_search)


def segmenter_name() -> str:
    """Which segmenter this process uses ("rjieba" or "jieba"); loads it on first call."""
    return _segmenter().name


def is_cjk_word(token: str) -> bool:
    return _CJK_WORD.fullmatch(token) is not None


def index_tokens(text: str) -> list[str]:
    """Tokens of a document, in order, sub-words included (search-mode segmentation)."""
    return _tokens(text, _segmenter().cut_for_search)


def query_tokens(text: str) -> list[str]:
    """Tokens of a query, in order, one per word (precise segmentation)."""
    return _tokens(text, _segmenter().cut)


def normalize(text: str) -> str:
    return unicodedata.normalize("NFKC", text).lower()


def _tokens(text: str, segment: Callable[[str], list[str]]) -> list[str]:
    tokens: list[str] = []
    for match in _RUNS.finditer(normalize(text)):
        if match.lastgroup == "cjk":
            tokens.extend(w for w in segment(match.group()) if w not in STOPWORDS)
        elif match.group() not in STOPWORDS:
            tokens.append(_stem(match.group()))
    return tokens


def _stem(word: str) -> str:
    """Strip an English plural ending; leaves short words, digits and `-ss/-us/-is` alone."""
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("sses"):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word
