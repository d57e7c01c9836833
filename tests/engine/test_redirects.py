"""A page that only says where its text went gives way to that page."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from lookup_knowledge.engine.corpus import load_documents
from lookup_knowledge.engine.index import KnowledgeIndex, _new_words, _with_display_titles
from lookup_knowledge.engine.lexicon import Lexicon

RUNBOOK = (
    "# KubeAPIDown\n\n## Meaning\n\nThe kube-apiserver has disappeared from Prometheus target"
    " discovery.\n\n## Diagnosis\n\nCheck the apiserver pods and their logs on every control"
    " plane node.\n"
)
MOVED = "https://github.com/openshift/runbooks/blob/master/alerts/apiserver/KubeAPIDown.md"


def _stubs(index: KnowledgeIndex) -> dict[str, str]:
    docs = index.documents
    return {docs[stub].source: docs[to].source for stub, to in index.redirects.targets.items()}


def test_a_moved_page_answers_in_place_of_its_stub(
    write_docs: Callable[[dict[str, str]], Path],
) -> None:
    docs = write_docs(
        {
            "apiserver/KubeAPIDown.md": RUNBOOK,
            # A URL of the corpus's own repository: its folder and file name are a page's.
            "monitoring/KubeAPIDown.md": (
                f"# KubeAPIDown\n\nThis alert has been moved to [alerts/apiserver/KubeAPIDown.md]"
                f"({MOVED})\n"
            ),
            "old/api-down.md": (
                "# KubeAPIDown\n\nMoved, see [the runbook](../apiserver/KubeAPIDown.md).\n"
            ),
        }
    )
    index = KnowledgeIndex(load_documents(docs))

    assert _stubs(index) == {
        "monitoring/KubeAPIDown.md": "apiserver/KubeAPIDown.md",
        "old/api-down.md": "apiserver/KubeAPIDown.md",
    }
    for question in ("KubeAPIDown", "kube api down"):
        hits = index.search(question, top_k=5).hits
        assert {h.chunk.source for h in hits} == {"apiserver/KubeAPIDown.md"}, question


def test_a_renamed_page_keeps_its_old_name(
    write_docs: Callable[[dict[str, str]], Path],
) -> None:
    docs = write_docs(
        {
            "apiserver/KubeAPIDown.md": RUNBOOK,
            "KubeAPIServerUnreachable.md": (
                "# KubeAPIServerUnreachable\n\nRenamed: [KubeAPIDown](apiserver/KubeAPIDown.md)\n"
            ),
            "notes.md": "# Notes\n\nThe scheduler and the controller manager run beside it.\n",
        }
    )
    index = KnowledgeIndex(load_documents(docs))

    hits = index.search("KubeAPIServerUnreachable", top_k=3).hits
    assert hits and hits[0].chunk.source == "apiserver/KubeAPIDown.md"
    assert hits[0].quality_score >= 0.75


def test_pages_that_are_no_redirect_to_the_corpus_stay(
    write_docs: Callable[[dict[str, str]], Path],
) -> None:
    docs = write_docs(
        {
            "apiserver/KubeAPIDown.md": RUNBOOK,
            # A link out of the corpus: the best the corpus has on its topic.
            "PrometheusOutOfOrderTimestamps.md": (
                "# PrometheusOutOfOrderTimestamps\n\nMore information in"
                " [blog](https://www.robustperception.io/debugging-out-of-order-samples)\n"
            ),
            # Another site's page that ends like a page of the corpus, under another name.
            "ApiserverNotes.md": (
                "# Apiserver notes\n\nSee [the upstream page](https://example.org/docs/apiserver/"
                "KubeAPIDown.md).\n"
            ),
            # A Chinese page with one link says more than a dozen words.
            "zh/apiserver.md": (
                "# apiserver 不可用\n\n先检查控制面节点上的 apiserver 进程是否存活，再看它的日志里"
                "有没有证书过期或者 etcd 连接失败的报错，最后确认负载均衡的健康检查配置。"
                "[runbook](../apiserver/KubeAPIDown.md)\n"
            ),
            # Stubs pointing at each other: neither answers for the other.
            "a/Loop.md": "# Loop\n\nMoved to [b](../b/Loop.md).\n",
            "b/Loop.md": "# Loop\n\nMoved to [a](../a/Loop.md).\n",
            # A stub whose target is a placeholder: the stub is all there is.
            "Pending.md": "# Pending\n\nSee [the new page](Later.md).\n",
            "Later.md": "# Later\n\nTODO\n",
        }
    )
    index = KnowledgeIndex(load_documents(docs))

    assert _stubs(index) == {}


def test_every_way_of_writing_the_one_link_is_read(
    write_docs: Callable[[dict[str, str]], Path],
) -> None:
    docs = write_docs(
        {
            "node/NodeRAIDDegraded.md": (
                "# NodeRAIDDegraded\n\nA disk of the array failed; replace it and rebuild.\n"
            ),
            # A Hugo cross-reference inside the link (prometheus-runbooks' NodeRAIDDiskFailure).
            "node/NodeRAIDDiskFailure.md": (
                "# NodeRAIDDiskFailure\n\n"
                'See [Node RAID Degraded]({{< ref "./NodeRAIDDegraded.md" >}})\n'
            ),
            "dns docs/CoreDNSDown.md": "# CoreDNSDown\n\nCoreDNS pods are not ready on any node.\n",
            "old/CoreDNSDown.md": (
                "# CoreDNSDown\n\nMoved to [here](<../dns docs/CoreDNSDown.md>).\n"
            ),
            "apiserver/KubeAPIDown.md": RUNBOOK,
            # A reference-style link, its definition on a line of its own.
            "ref/KubeAPIDown.md": (
                "# KubeAPIDown\n\nThis runbook now lives [here][new].\n\n"
                "[new]: ../apiserver/KubeAPIDown.md\n"
            ),
            # A bare URL that ends a sentence, the corpus one folder deeper than the URL says.
            "deep/apiserver/KubeAggregatedAPIErrors.md": (
                "# KubeAggregatedAPIErrors\n\nThe aggregated API returns errors.\n"
            ),
            "moved/KubeAggregatedAPIErrors.md": (
                "# KubeAggregatedAPIErrors\n\nMoved to https://github.com/o/r/blob/main/alerts/"
                "apiserver/KubeAggregatedAPIErrors.md.\n"
            ),
        }
    )
    index = KnowledgeIndex(load_documents(docs))

    assert _stubs(index) == {
        "node/NodeRAIDDiskFailure.md": "node/NodeRAIDDegraded.md",
        "old/CoreDNSDown.md": "dns docs/CoreDNSDown.md",
        "ref/KubeAPIDown.md": "apiserver/KubeAPIDown.md",
        "moved/KubeAggregatedAPIErrors.md": "deep/apiserver/KubeAggregatedAPIErrors.md",
    }
    hits = index.search("NodeRAIDDiskFailure", top_k=3).hits
    assert hits and hits[0].chunk.source == "node/NodeRAIDDegraded.md"


def test_a_short_page_with_words_of_its_own_or_a_folder_page_is_no_stub(
    write_docs: Callable[[dict[str, str]], Path],
) -> None:
    docs = write_docs(
        {
            "kubelet-logs.md": "# Kubelet logs\n\nRead them with journalctl -u kubelet.\n",
            "restart-kubelet.md": (
                "# Restart kubelet\n\nRun `systemctl restart kubelet` on the node. See also"
                " [kubelet logs](kubelet-logs.md).\n"
            ),
            "net/_index.md": "# Networking\n\n- [DNS](../kubelet-logs.md)\n",
        }
    )
    index = KnowledgeIndex(load_documents(docs))

    assert _stubs(index) == {}
    hits = index.search("restart kubelet systemctl", top_k=3).hits
    assert hits and hits[0].chunk.source == "restart-kubelet.md"


def test_a_deployment_adds_its_own_pointer_words(
    write_docs: Callable[[dict[str, str]], Path],
) -> None:
    docs = write_docs(
        {
            "apiserver/KubeAPIDown.md": RUNBOOK,
            "old/KubeAPIDown.md": (
                "# KubeAPIDown\n\nDéplacé vers [la page](../apiserver/KubeAPIDown.md).\n"
            ),
            ".lexicon/pointers.txt": "déplacé vers la\n",
        }
    )

    assert _stubs(KnowledgeIndex(load_documents(docs))) == {}
    told = KnowledgeIndex(load_documents(docs), Lexicon.load(docs))
    assert _stubs(told) == {"old/KubeAPIDown.md": "apiserver/KubeAPIDown.md"}


def test_a_corpus_without_stubs_is_indexed_as_ever() -> None:
    index = KnowledgeIndex(load_documents())

    assert index.redirects.targets == {}
    assert index.chunk_count == sum(len(d.chunks) for d in index.documents)


def test_the_title_a_site_shows_is_one_of_a_page_names(
    write_docs: Callable[[dict[str, str]], Path],
) -> None:
    docs = write_docs(
        {
            "KubeletPlegDurationHigh.md": (
                "---\ntitle: Kubelet Pod Lifecycle Event Generator Duration High\n---\n"
                "# KubeletPlegDurationHigh\n\n## Meaning\n\nThe kubelet's relist takes too long."
                "\n\n## Diagnosis\n\nCheck the container runtime on the node.\n"
            ),
            "KubeletDown.md": (
                "---\ntitle: Kubelet Down\n---\n# KubeletDown\n\n## Meaning\n\nThe kubelet"
                " has disappeared from the targets. Check its event log and the node.\n"
            ),
        }
    )
    index = KnowledgeIndex(load_documents(docs))

    hits = index.search("pod lifecycle event generator is slow", top_k=2).hits
    assert hits and hits[0].chunk.source == "KubeletPlegDurationHigh.md"
    # A title the heading already says (`Kubelet Down`, `# KubeletDown`) adds no name.
    named = _with_display_titles(index.documents, {})
    assert {index.documents[n].source: names for n, names in named.items()} == {
        "KubeletPlegDurationHigh.md": ("Kubelet Pod Lifecycle Event Generator Duration High",)
    }


@pytest.mark.parametrize(
    ("shown", "heading", "new"),
    [
        ("Kubelet Pod Lifecycle Event Generator Duration High", "KubeletPlegDurationHigh", True),
        ("Node Network Receive Errors", "NodeNetworkReceiveErrs", True),
        ("Kube State Metric sWatch Errors", "KubeStateMetricsWatchErrors", False),  # misspaced
        ("redis memory disk", "RedisMemoryDisk42", False),  # a name's number is no word
        ("磁盘 满了", "磁盘满了", False),
        ("Kube API Down", "KubeAPIDown", False),
    ],
)
def test_a_displayed_title_is_a_new_name_only_when_it_says_new_words(
    shown: str, heading: str, new: bool
) -> None:
    assert _new_words(shown, heading) is new
