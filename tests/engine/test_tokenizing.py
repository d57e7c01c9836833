"""Tokenization of Chinese and English operations text."""

from __future__ import annotations

import pytest

from lookup_knowledge.engine import glossary
from lookup_knowledge.engine.tokenize import (
    STOPWORDS,
    dictionary_words,
    index_tokens,
    query_tokens,
    segmenter_name,
    stem,
)


def test_chinese_query_is_segmented_into_words_without_question_words() -> None:
    assert query_tokens("网关超时怎么排查") == ["网关", "超时", "排查"]


def test_document_tokens_include_sub_words_so_a_shorter_query_word_matches() -> None:
    tokens = index_tokens("数据库连接池耗尽")

    assert {"数据库", "连接池", "连接", "耗尽"} <= set(tokens)
    assert "连接" not in query_tokens("数据库连接池耗尽")


def test_english_is_lowercased_without_stopwords_or_punctuation() -> None:
    assert query_tokens("How do I fix the Redis memory, usage HIGH?!") == [
        "fix",
        "redis",
        "memory",
        "usag",  # stemmed like "usages", "usage" in a document
        "high",
    ]


@pytest.mark.parametrize(
    ("word", "token"),
    [
        ("timeouts", "timeout"),
        ("queries", "query"),
        ("classes", "class"),
        ("redis", "redis"),
        ("status", "status"),
        ("process", "process"),
        ("dns", "dns"),
        ("504", "504"),
    ],
)
def test_plural_endings_are_stripped_from_english_words(word: str, token: str) -> None:
    assert query_tokens(word) == [token]


@pytest.mark.parametrize(
    "forms",
    [
        ("rebalance", "rebalances", "rebalancing", "rebalanced"),
        ("fail", "fails", "failing", "failed"),
        ("restart", "restarts", "restarting", "restarted"),
        ("run", "runs", "running"),
        ("log", "logs", "logging", "logged"),
        ("queue", "queues", "queued", "queueing"),
        ("cache", "caches", "caching", "cached"),
        ("exceed", "exceeds", "exceeded"),
        ("kill", "kills", "killed"),
        ("apply", "applies", "applied"),
    ],
)
def test_english_inflections_of_a_word_share_one_stem(forms: tuple[str, ...]) -> None:
    assert len({stem(form) for form in forms}) == 1, {form: stem(form) for form in forms}


@pytest.mark.parametrize("word", ["speed", "string", "spring", "status", "redis", "dns", "ms"])
def test_the_stemmer_leaves_words_that_only_look_inflected_alone(word: str) -> None:
    assert stem(word) == word


def test_documents_and_queries_are_stemmed_alike() -> None:
    assert "rebalanc" in index_tokens("The group is rebalancing constantly.")
    assert query_tokens("rebalance storms") == ["rebalanc", "storm"]


def test_conversational_chinese_fillers_and_hedges_are_dropped() -> None:
    assert query_tokens("队列里 Ready 消息越来越多，消费者处理不过来") == [
        "队列",
        "ready",
        "消息",
        "消费者",
        "处理",
    ]
    assert query_tokens("内存满了而且延迟很高，怀疑是大 key 导致的") == [
        "内存",
        "满",
        "延迟",
        "高",
        "大",
        "key",
    ]


def test_english_hedges_and_contractions_are_dropped() -> None:
    assert query_tokens("I think the pods keep restarting, don't they? Maybe it's OOM") == [
        "pod",
        "restart",
        "oom",
    ]


@pytest.mark.parametrize(
    "word", ["高", "大", "慢", "满", "长", "同时", "反复", "突然", "失败", "超时", "high", "full"]
)
def test_operations_vocabulary_is_never_a_stopword(word: str) -> None:
    assert word not in STOPWORDS


def test_a_word_guessed_by_jieba_can_be_re_read_with_the_dictionary_alone() -> None:
    assert query_tokens("怀疑有大 key") == ["有大", "key"]  # the HMM's guess
    assert dictionary_words("有大") == ["大"]  # 有 is a stopword
    assert dictionary_words("变黄") == ["变", "黄"]
    assert dictionary_words("红烧肉") == ["红烧肉"]


def test_identifiers_split_into_their_words() -> None:
    assert query_tokens("max_connections proxy-read-timeout") == [
        "max",
        "connection",
        "proxy",
        "read",
        "timeout",
    ]


def test_full_width_characters_are_normalized() -> None:
    assert query_tokens("Ｒｅｄｉｓ　５０４") == ["redis", "504"]


def test_mixed_chinese_and_english_runs_are_split_apart() -> None:
    assert query_tokens("Redis内存过高") == ["redis", "内存", "过高"]


def test_a_known_segmenter_is_loaded() -> None:
    assert segmenter_name() in {"rjieba", "jieba"}


def test_every_glossary_entry_is_a_single_query_token() -> None:
    entries = [word for group in glossary.entries() for word in group]

    assert {word for word in entries if len(query_tokens(word)) != 1} == set()
    assert glossary.glossary_tokens() == {query_tokens(word)[0] for word in entries}


def test_any_inflection_of_an_english_glossary_entry_finds_its_group() -> None:
    assert query_tokens("failing") == ["fail"]
    assert "fail" in glossary.variants("失败")
    assert "失败" in glossary.variants(query_tokens("failed")[0])
    assert "偏移量" in glossary.variants(query_tokens("offsets")[0])


@pytest.mark.parametrize(
    ("chinese", "english"),
    [
        ("时钟", "clock"),
        ("服务器", "server"),
        ("均衡", "balancer"),
        ("缓冲", "buffer"),
        ("健康", "health"),
        ("检查", "check"),
        ("同步", "sync"),
        ("使用率", "usage"),
        ("落后", "behind"),
    ],
)
def test_common_operations_vocabulary_is_in_the_glossary(chinese: str, english: str) -> None:
    (token,) = query_tokens(english)
    assert token in glossary.variants(chinese)
    assert chinese in glossary.variants(token)


def test_glossary_maps_chinese_and_english_both_ways() -> None:
    assert "memory" in glossary.variants("内存")
    assert "内存" in glossary.variants("memory")
    assert glossary.variants("kubectl") == {"kubectl"}
