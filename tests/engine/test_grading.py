"""The grading features of candidates, through the index."""

from __future__ import annotations

from pathlib import Path

from lookup_knowledge.engine import scoring
from lookup_knowledge.engine.corpus import load_documents
from lookup_knowledge.engine.index import KnowledgeIndex, NoEvidenceBasis


def test_a_query_naming_the_whole_title_covers_the_heading(tmp_path: Path) -> None:
    (tmp_path / "hpa.md").write_text("# Autoscaler maxed out\n\nThe autoscaler cannot add pods.\n")
    (tmp_path / "disk.md").write_text("# Disk full\n\nThe autoscaler log fills the disk.\n")
    index = KnowledgeIndex(load_documents(tmp_path))

    by_source = _by_source(index, "autoscaler maxed out", "heading_coverage")

    assert by_source["hpa.md"] == 1.0
    assert by_source["disk.md"] == 0.0


def test_heading_coverage_weighs_the_rare_title_words_more(tmp_path: Path) -> None:
    for n in range(6):
        (tmp_path / f"node{n}.md").write_text(f"# Node alert {n}\n\nThe node is down.\n")
    (tmp_path / "hpa.md").write_text("# Node autoscaler maxed\n\nThe autoscaler is at max.\n")
    index = KnowledgeIndex(load_documents(tmp_path))

    def coverage(query: str) -> float:
        return _by_source(index, query, "heading_coverage")["hpa.md"]  # a KeyError: no candidate

    rare, common = coverage("autoscaler maxed"), coverage("node alert")

    assert 0.0 < common < 0.5 < rare < 1.0


def test_the_scope_is_the_heaviest_concepts_or_a_share_of_them_all() -> None:
    """Sixteen concepts make a full question; a query of many more is never covered by
    covering sixteen of them (docs/retrieval.md#quality-score)."""
    assert scoring.scope_weight([3.0, 1.0, 2.0]) == 6.0
    assert scoring.scope_weight([1.0] * 40) == 16.0  # 40 / 3 is less
    assert scoring.scope_weight([1.0] * 90) == 30.0  # a third of 90, above the sixteen


def test_an_unknown_lone_character_counts_against_a_hit_less_than_an_unknown_word(
    tmp_path: Path,
) -> None:
    (tmp_path / "conntrack.md").write_text(
        "# conntrack 插入失败\n\n`conntrack -S` 看到 `insert_failed` 数量在不断增加。\n"
    )
    (tmp_path / "disk.md").write_text("# 磁盘满了\n\n清理容器日志，释放磁盘空间。\n")
    index = KnowledgeIndex(load_documents(tmp_path))

    def support(query: str) -> float:
        return _by_source(index, query, "support")["conntrack.md"]

    # `涨` (rises) and `飙升` (soars): neither is a word of the corpus. A lone character is
    # as often a fragment of a word the segmenter could not read as a word of its own.
    lone = support("conntrack insert_failed 一直在涨")
    word = support("conntrack insert_failed 飙升")
    assert lone > word


def _by_source(index: KnowledgeIndex, query: str, feature: str) -> dict[str, float]:
    """Each candidate document's best value of one grading feature for `query`."""
    graded = index.grade(query)
    assert not isinstance(graded, NoEvidenceBasis)
    column = scoring.FEATURES.index(feature)
    found: dict[str, float] = {}
    for c, f in zip(graded.candidates, graded.features, strict=True):
        source = index.chunk(int(c)).source
        found[source] = max(found.get(source, float("-inf")), float(f[column]))
    return found
