"""Tokenization of Chinese and English operations text."""

from __future__ import annotations

import pytest

from lookup_knowledge.engine import glossary
from lookup_knowledge.engine.tokenize import index_tokens, query_tokens, segmenter_name


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
        "usage",
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
    assert {t for t in glossary.glossary_tokens() if query_tokens(t) != [t]} == set()


def test_glossary_maps_chinese_and_english_both_ways() -> None:
    assert "memory" in glossary.variants("内存")
    assert "内存" in glossary.variants("memory")
    assert glossary.variants("kubectl") == {"kubectl"}
