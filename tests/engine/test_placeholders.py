"""Sections yet to be written (`TODO`) are no evidence: the index leaves them out."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from lookup_knowledge.engine.corpus import load_documents
from lookup_knowledge.engine.index import KnowledgeIndex
from lookup_knowledge.engine.lexicon import Lexicon

PHRASES = Lexicon.load().placeholders


@pytest.mark.parametrize(
    "text",
    [
        "TODO",
        "To be added.",
        "**TBD**",
        "TODO 优化",
        "TODO: fill in",
        "待补充",
        "暂无。",
        "{{% children depth=2 %}}",
        "<!-- the steps go here -->",
        "",
    ],
)
def test_a_section_yet_to_be_written_is_a_placeholder(text: str) -> None:
    assert PHRASES.match(text)


@pytest.mark.parametrize(
    "text",
    [
        "todos are tracked in the team's board",  # a word that starts like a phrase
        "TODO 1. Check the kubelet logs. 2. Restart the kubelet.",  # a note that says something
        "暂无法连接数据库",  # `暂无` is not a word of it
        "暂无。可先扩容节点",  # the note says what to do
        "暂无，业务无影响。",  # `none, no impact` is an answer
        "TODO add the steps",  # a note too long to be only a reminder
        "Clock not synchronising.",
        'See {{< relref "kubelet.md" >}} for the kubelet\'s flags.',
        "137",
    ],
)
def test_a_section_with_text_of_its_own_is_no_placeholder(text: str) -> None:
    assert not PHRASES.match(text)


def test_the_index_never_answers_with_a_placeholder(
    write_docs: Callable[[dict[str, str]], Path],
) -> None:
    docs = write_docs(
        {
            "KubeletPlegDurationHigh.md": (
                "# KubeletPlegDurationHigh\n\n## Meaning\n\nThe kubelet's pod lifecycle event"
                " generator takes too long to relist pods.\n\n## Mitigation\n\nTODO\n"
            ),
            "conntrack-conflict.md": "# conntrack conflicts drop packets\n\nTODO\n",
            "dns-delay.md": (
                "# DNS lookups wait 5 seconds\n\nTwo UDP packets of one socket race in conntrack;"
                " the conflict drops one of them and the resolver retries after 5 s.\n"
            ),
        }
    )
    documents = load_documents(docs)
    index = KnowledgeIndex(documents)

    # The documents keep their chunks (and ids); the index holds the written ones only.
    assert sum(len(d.chunks) for d in documents) == 4
    assert index.chunk_count == 2 and index.placeholder_count == 2
    hits = index.search("KubeletPlegDurationHigh mitigation", top_k=5).hits
    assert hits and all(h.chunk.content.strip() != "TODO" for h in hits)
    assert hits[0].chunk.breadcrumb == "KubeletPlegDurationHigh > Meaning"
    hits = index.search("conntrack conflict drops packets", top_k=5).hits
    assert [h.chunk.source for h in hits][:1] == ["dns-delay.md"]


def test_a_corpus_of_placeholders_alone_says_so(
    write_docs: Callable[[dict[str, str]], Path],
) -> None:
    docs = write_docs({"a.md": "# Disk full\n\nTODO\n", "b.md": "# Clock skew\n\nTBD\n"})

    with pytest.raises(ValueError, match="all 2 chunks are placeholders"):
        KnowledgeIndex(load_documents(docs))


def test_a_deployment_adds_its_own_placeholders_next_to_its_docs(
    write_docs: Callable[[dict[str, str]], Path],
) -> None:
    docs = write_docs(
        {
            "a.md": "# Disk full\n\n## Cause\n\nLogs fill the disk.\n\n## Fix\n\nPending review.\n",
            ".lexicon/placeholders.txt": "# ours\npending review\n",
        }
    )
    lexicon = Lexicon.load(docs)

    assert "pending review" in lexicon.placeholders and "pending review" not in PHRASES
    assert KnowledgeIndex(load_documents(docs), lexicon).chunk_count == 1
    assert KnowledgeIndex(load_documents(docs)).chunk_count == 2
