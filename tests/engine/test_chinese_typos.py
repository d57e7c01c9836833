"""Chinese typos: a character that sounds like the right one, read through CC-CEDICT."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from lookup_knowledge.engine.bilingual import Translations, sound_alike
from lookup_knowledge.engine.corpus import load_documents
from lookup_knowledge.engine.index import KnowledgeIndex
from lookup_knowledge.engine.lexicon import Lexicon
from lookup_knowledge.engine.query import Known

STOPWORDS = Lexicon.load().stopwords


def _translations(words: list[str]) -> Translations:
    corpus = set(words)
    return Translations(words, corpus.__contains__, STOPWORDS)


def test_a_homophone_in_one_character_is_the_corpus_word() -> None:
    respell = _translations(["节点", "认证", "使用率", "内存", "内核"]).respell

    assert respell("节店", 1) == "节点"  # dian = dian
    assert respell("认正", 1) == "认证"
    assert respell("使用律", 2) == "使用率"  # 率 reads lv and shuai
    assert respell("节店", 0) is None  # the other character is the same in no corpus word


def test_fuzzy_pinyin_confusions_sound_alike_and_others_do_not() -> None:
    assert sound_alike(frozenset({"chun"}), frozenset({"cun"}))  # ch / c
    assert sound_alike(frozenset({"jin"}), frozenset({"jing"}))  # -in / -ing
    assert not sound_alike(frozenset({"tai"}), frozenset({"ti"}))
    assert not sound_alike(frozenset({"he"}), frozenset({"ge"}))


def test_a_word_as_typed_is_no_typo_and_a_correction_must_be_a_word() -> None:
    respell = _translations(["公式", "全死"]).respell

    assert respell("公司", 1) is None  # 公司 is a word: not a misspelt 公式
    assert respell("全是", 1) is None  # 全死 is a corpus fragment, no dictionary word


def test_a_misspelt_word_in_a_question_finds_its_runbook(
    write_docs: Callable[[dict[str, str]], Path],
) -> None:
    docs = write_docs(
        {
            "node.md": "# 节点 NotReady\n\n节点状态异常时先看 kubelet 日志。\n",
            "disk.md": "# 磁盘满\n\n清理日志释放空间。\n",
        }
    )
    index = KnowledgeIndex(load_documents(docs))

    read = index.read("节店 NotReady 怎么办")
    hits = index.search("节店 NotReady 怎么办", top_k=3).hits

    typo = next(c for c in read.concepts if c.token == "节店")
    assert typo.known is Known.TYPO and "节点" in typo.variants
    assert not any(c.token in ("节", "店") for c in read.concepts)  # the fragments it replaced
    assert hits and hits[0].chunk.source == "node.md"


def test_words_the_corpus_knows_are_never_respelt(
    write_docs: Callable[[dict[str, str]], Path],
) -> None:
    docs = write_docs({"a.md": "# 节点\n\n节点和认证。\n"})
    index = KnowledgeIndex(load_documents(docs))

    read = index.read("节点认证")

    assert {c.token: c.known for c in read.concepts} == {"节点": Known.KNOWN, "认证": Known.KNOWN}
