"""Pages that only point to another page of the corpus (`engine.redirects`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from lookup_knowledge.engine.corpus import load_documents
from lookup_knowledge.engine.index import KnowledgeIndex

WriteDocs = Callable[[dict[str, str]], Path]

RUNBOOK = (
    "# KubeAPIDown\n\n## Meaning\n\nThe Kubernetes API server has disappeared from discovery."
    "\n\n## Mitigation\n\nCheck the kube-apiserver pods and their logs on the control plane.\n"
)
MOVED = (
    "# KubeAPIDown\n\nThis alert has been moved to [alerts/apiserver/KubeAPIDown.md]"
    "(https://github.com/example/runbooks/blob/master/alerts/apiserver/KubeAPIDown.md)"
)


def _index(docs: Path) -> KnowledgeIndex:
    return KnowledgeIndex(load_documents(docs))


def test_a_page_that_only_says_it_moved_gives_way_to_the_page_it_names(
    write_docs: WriteDocs,
) -> None:
    docs = write_docs({"apiserver/KubeAPIDown.md": RUNBOOK, "monitoring/KubeAPIDown.md": MOVED})
    index = _index(docs)

    sources = [d.source for d in index.documents]
    assert {sources[s]: sources[t] for s, t in index.redirects.items()} == {
        "monitoring/KubeAPIDown.md": "apiserver/KubeAPIDown.md"
    }
    hits = index.search("KubeAPIDown", top_k=5).hits
    assert hits and {h.chunk.source for h in hits} == {"apiserver/KubeAPIDown.md"}


def test_a_relative_link_is_read_from_the_page_s_folder(write_docs: WriteDocs) -> None:
    docs = write_docs(
        {
            "apiserver/KubeAPIDown.md": RUNBOOK,
            "monitoring/KubeAPIDown.md": (
                "# KubeAPIDown\n\nMoved: see [here](../apiserver/KubeAPIDown.md).\n"
            ),
        }
    )

    assert len(_index(docs).redirects) == 1


def test_a_link_out_of_the_corpus_or_a_page_with_text_of_its_own_stays(
    write_docs: WriteDocs,
) -> None:
    docs = write_docs(
        {
            "apiserver/KubeAPIDown.md": RUNBOOK,
            # the best the corpus has on out-of-order samples: a pointer to a blog
            "OutOfOrder.md": "# OutOfOrderTimestamps\n\nMore in [blog](https://blog.example/ooo)\n",
            # a link to the runbook, and an answer of its own
            "notes/api.md": (
                "# API outage notes\n\nSee [the runbook](../apiserver/KubeAPIDown.md). During the"
                " last outage the etcd members had lost quorum, so restoring etcd from a"
                " snapshot brought the API server back.\n"
            ),
        }
    )
    index = _index(docs)

    assert index.redirects == {}
    assert index.search("out of order timestamps", top_k=1).hits[0].chunk.source == "OutOfOrder.md"


def test_stubs_that_point_at_each_other_both_stay(write_docs: WriteDocs) -> None:
    docs = write_docs(
        {
            "a.md": "# Alpha\n\nMoved to [b](b.md).\n",
            "b.md": "# Beta\n\nMoved to [a](a.md).\n",
        }
    )
    index = _index(docs)

    assert index.redirects == {}
    assert index.chunk_count == 2
