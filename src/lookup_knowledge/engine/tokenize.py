"""Tokenization for mixed Chinese/English operations text.

Text is NFKC-normalized (full-width → half-width) and lowercased, then cut into runs:

* CJK runs are segmented with jieba's dictionary. Documents use search mode (every word plus
  its dictionary sub-words, so `连接池` also yields `连接`), queries use precise mode (one
  token per word, so each query word is counted once when scoring coverage). A precise
  query word is therefore always found in a document that contains it. jieba's HMM guesses
  words its dictionary lacks (`回滚`, `丢包`), and sometimes glues characters into a word no
  document contains (`怀疑有大 key` → `有大`), which would weigh as the rarest term; the
  index re-reads such a query word with the dictionary alone (`dictionary_words`).
* Other runs of letters and digits are split on everything else (`max_connections` →
  `max`, `connections`) and lightly stemmed (`stem`: plurals, `-ed`, `-ing`, a final `-e`,
  so `rebalancing` finds `rebalance`) — applied to documents, queries and glossary entries
  alike, so stems only have to be consistent, not words.

Stopwords are dropped before stemming: English function words, Chinese particles, pronouns,
conjunctions, prepositions, degree/time adverbs, modal verbs, question words (`怎么`),
directional complements (`过来`), vague quantifiers (`多`) and the hedges of conversational
questions (`怀疑`, `感觉`, `keep`, `seems`). They matter more than their number suggests: a
word the knowledge base never uses gets the highest weight in `engine.scoring`, so one
unlisted filler (`越来越`) could hold a well-covered question under the reference threshold.

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


# Function words carry no topic: a query is about its content words, and an unknown function
# word would otherwise weigh as much as the rarest content word (scoring gives words the corpus
# never uses the highest weight). Both lists are applied to documents and queries alike.
ENGLISH_STOPWORDS = _words(
    """
    a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing during each few for from
    further had has have having he her here hers him his how i if in into is it its itself
    just me more most my no nor not of on once only or other our ours over own same
    she should so some such than that the their theirs them then there these they this those
    through to too under until very was we were what when where which while who whom why
    will with would you your yours please get got need needs want

    also although always among anyway around actually basically either else etc even ever
    every however instead likely lot lots maybe may might must never often
    perhaps probably quite rather really since sometimes somehow still though thus unless
    upon us usually whether within without yet
    seem seems seemed seeming keep keeps kept think thinks guess suspect suspected wonder
    sure anything something everything someone anyone
    don doesn didn isn aren wasn weren won wouldn couldn shouldn haven hasn hadn
    s t d ll re ve m
    """
)
# Chinese function words, by kind: particles and auxiliaries; pronouns and demonstratives;
# question words; conjunctions; prepositions and locative particles; degree, time and
# frequency adverbs; modal verbs; hedges and discourse words of conversational questions
# ("怀疑", "感觉", "好像"); directional complements ("过来", "下去"); vague quantifiers.
# Operations vocabulary (高, 大, 慢, 满, 反复, 同时, 突然 ...) is deliberately not here.
CHINESE_STOPWORDS = _words(
    """
    的 地 得 了 着 过 之 所 吗 呢 吧 啊 呀 嘛 哦 哈 啦 呗 而已 罢了 似的 一样 的话

    我 我们 你 你们 您 他 她 它 他们 她们 它们 咱们 大家 自己 别人 人家 本身
    这 那 此 其 该 这个 那个 这些 那些 这里 那里 这儿 那儿 这边 那边 这样 那样 这么 那么
    这种 那种 这次 那次 其他 其它 其中 某 某些 有些 一些 一个 一下 一点 一点儿 一种 一
    各 各种 每 每个 任何

    什么 怎么 怎样 怎么办 怎么样 咋 咋办 啥 如何 为什么 为何 干嘛 哪 哪些 哪个 哪里 哪儿
    多少 是否 是不是 有没有 能不能 会不会 要不要 可不可以

    和 与 及 以及 或 或者 还是 而 而且 并且 并 但 但是 可是 不过 然而 所以 因此 因为 由于
    如果 假如 要是 即使 虽然 尽管 然后 接着 于是 既然 只要 只有 除了 另外 此外 以便 从而
    导致 引起 造成 引发 使得

    在 从 向 往 对 对于 关于 把 被 让 给 跟 比 为 为了 以 于 由 到 自 通过 按照 根据 随着
    里 里面 上面 下面 中间 当中 之中 之后 以后 之前 以前 时 时候 的时候 期间

    很 非常 太 特别 十分 比较 更 更加 最 挺 极 极其 相当 稍微 有点 有点儿 越来越 越 愈
    已经 曾经 正在 刚 刚刚 刚才 马上 立刻 一直 总是 老是 经常 常常 时常 往往 偶尔 有时
    有时候 始终 仍 仍然 还 还有 又 再 也 都 就 才 只 只是 仅 仅仅 一起 究竟 到底 其实 确实
    反正 总之 基本 基本上 现在 目前 最近 今天 昨天 刚好 正好 大概 大约 左右 差不多

    是 有 没 没有 不 别 能 能否 能够 可以 可能 会 要 需要 应该 应当 必须 想 想要 希望 用 进行
    做 搞 弄 看看 一下子

    怀疑 感觉 觉得 好像 似乎 貌似 估计 也许 或许 看起来 看上去 看来 发现 知道 认为 以为
    请 请问 麻烦 谢谢 帮忙 帮 求助

    起来 下去 出来 过来 过去 上来 下来 进来 出去 回来

    多 少 很多 许多 好多 不少 几 几个 等 等等
    """
)
STOPWORDS = ENGLISH_STOPWORDS | CHINESE_STOPWORDS


@dataclass(frozen=True, slots=True)
class _Segmenter:
    name: str
    cut: Callable[[str], list[str]]
    cut_for_search: Callable[[str], list[str]]
    cut_dictionary_only: Callable[[str], list[str]]


@functools.cache
def _segmenter() -> _Segmenter:
    """Load the Chinese segmenter once per process (rjieba if installed, else jieba)."""
    try:
        rjieba: Any = importlib.import_module("rjieba")
    except ImportError:
        pass
    else:
        return _Segmenter(
            "rjieba",
            rjieba.cut,
            rjieba.cut_for_search,
            lambda text: rjieba.cut(text, False),  # hmm=False
        )
    import jieba

    jieba.setLogLevel(logging.WARNING)
    jieba.initialize()
    return _Segmenter(
        "jieba", jieba.lcut, jieba.lcut_for_search, lambda text: jieba.lcut(text, HMM=False)
    )


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


def dictionary_words(word: str) -> list[str]:
    """A query word re-read with jieba's dictionary alone, stopwords dropped.

    jieba's HMM guesses words its dictionary lacks, which is right for `回滚` or `丢包` but
    sometimes glues a function character onto a neighbour (`怀疑有大 key` → `有大`) or two
    unrelated characters together (`集群变黄` → `变黄`). The index re-reads a query word this
    way when no chunk contains it: `有大` → `大`, `变黄` → `变`, `黄`.
    """
    return _tokens(word, _segmenter().cut_dictionary_only)


def normalize(text: str) -> str:
    return unicodedata.normalize("NFKC", text).lower()


def _tokens(text: str, segment: Callable[[str], list[str]]) -> list[str]:
    tokens: list[str] = []
    for match in _RUNS.finditer(normalize(text)):
        if match.lastgroup == "cjk":
            tokens.extend(w for w in segment(match.group()) if w not in STOPWORDS)
        elif match.group() not in STOPWORDS:
            tokens.append(stem(match.group()))
    return tokens


_VOWELS = frozenset("aeiouy")


@functools.lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A light English stemmer: plural, `-ed`/`-ing` and a final `-e` are stripped.

    `timeouts` → `timeout`, `rebalancing` / `rebalanced` / `rebalances` / `rebalance` →
    `rebalanc`, `running` → `run`, `queries` → `query`, `applied` → `apply`. Stems need not be
    words: the same function is applied to documents, queries and glossary entries, so it only
    has to be consistent. It is deliberately smaller than Porter/Snowball (no `-ation`, `-er`,
    `-ly`, ...): those conflate operations terms that differ (`server`/`serve`,
    `consumer`/`consume`), and the glossary already groups the forms that mean the same thing.
    Short words (3 letters or fewer), words with digits, `-ss/-us/-is` and `-eed` (`exceed`,
    `speed`) endings are kept, and a suffix is only removed when at least three letters with
    a vowel remain.
    """
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("sses"):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    if word.endswith("ied") and len(word) > 4:
        word = word[:-3] + "y"
    else:
        for suffix in ("ing", "ed"):
            if word.endswith(suffix) and not word.endswith("eed"):
                root = word[: -len(suffix)]
                if len(root) >= 3 and not _VOWELS.isdisjoint(root):
                    if root[-1] == root[-2] and root[-1] not in _VOWELS and root[-1] not in "lsz":
                        root = root[:-1]  # running → run, logging → log; but kill, miss
                    word = root
                break
    if len(word) >= 4 and word.endswith("e") and not word.endswith("ee"):
        word = word[:-1]
    return word
