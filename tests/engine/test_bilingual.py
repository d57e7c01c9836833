"""Cross-language reading through CC-CEDICT, restricted to what the corpus holds."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from lookup_knowledge.engine.bilingual import Translations, senses
from lookup_knowledge.engine.corpus import load_documents
from lookup_knowledge.engine.index import KnowledgeIndex
from lookup_knowledge.engine.lexicon import Lexicon
from lookup_knowledge.engine.query import Known

STOPWORDS = Lexicon.load().stopwords


def test_only_single_word_senses_are_kept_stemmed() -> None:
    found = senses("to go up by one grade; to queue up/(computing) to upgrade/quota", STOPWORDS)

    assert found == {"upgrad", "quota"}


def test_a_sense_through_a_copula_is_its_one_word() -> None:
    # `to be missing` (不见), `to get disconnected` (掉线), `to become stuck`: the verb adds
    # nothing to the word it introduces.
    found = senses(
        "to be missing/to get disconnected (from the Internet)/to become stuck/to be on duty",
        STOPWORDS,
    )

    assert found == {"miss", "disconnect", "stuck"}


def test_translations_are_only_the_words_the_corpus_holds() -> None:
    corpus = {"quota", "配额", "限额"}
    translate = Translations(["配额", "限额"], corpus.__contains__, STOPWORDS)

    assert translate("配额") == frozenset({"quota"})  # not "ration": no chunk has it
    assert translate("quota") == frozenset({"配额", "限额"})
    assert translate("红烧肉") == frozenset()


def test_an_english_question_finds_a_chinese_runbook_through_the_dictionary(
    write_docs: Callable[[dict[str, str]], Path],
) -> None:
    docs = write_docs(
        {
            "quota.md": "# 命名空间配额用尽\n\n配额用完以后无法再创建资源。\n",
            "disk.md": "# 磁盘满\n\n清理日志释放空间。\n",
        }
    )
    index = KnowledgeIndex(load_documents(docs))

    read = index.read("resource quota")
    hits = index.search("resource quota", top_k=5).hits

    assert [c.variants for c in read.concepts if c.token == "quota"] == [("配额",)]
    assert hits and hits[0].chunk.source == "quota.md"


def test_a_word_the_corpus_holds_itself_is_not_translated(
    write_docs: Callable[[dict[str, str]], Path],
) -> None:
    docs = write_docs({"a.md": "# Quota 配额\n\nquota 用尽。\n"})
    index = KnowledgeIndex(load_documents(docs))

    concept = next(c for c in index.read("quota").concepts if c.token == "quota")

    assert concept.variants == ("quota",)
    assert concept.known is Known.KNOWN
