"""Finding the Markdown files of a docs folder or of the bundled knowledge base."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from lookup_knowledge.engine.corpus import KnowledgeBaseError, bundled_kb, load_documents

WriteDocs = Callable[[dict[str, str]], Path]


def test_a_missing_docs_dir_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(KnowledgeBaseError, match="does not exist"):
        load_documents(tmp_path / "nope")


def test_a_file_instead_of_a_folder_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# A\n\ntext\n", encoding="utf-8")

    with pytest.raises(KnowledgeBaseError, match="not a directory"):
        load_documents(tmp_path / "a.md")


def test_a_folder_without_markdown_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("not markdown", encoding="utf-8")

    with pytest.raises(KnowledgeBaseError, match="no Markdown"):
        load_documents(tmp_path)


def test_markdown_without_any_text_is_a_clear_error(write_docs: WriteDocs) -> None:
    docs = write_docs({"empty.md": "---\ncategory: x\n---\n# Title only\n"})

    with pytest.raises(KnowledgeBaseError, match="no text"):
        load_documents(docs)


def test_dot_folders_and_other_files_are_skipped(write_docs: WriteDocs) -> None:
    docs = write_docs(
        {
            "a.md": "# A\n\ntext\n",
            "deep/er/b.MARKDOWN": "# B\n\ntext\n",
            ".git/c.md": "# C\n\ntext\n",
            "d.txt": "text",
        }
    )

    assert [d.source for d in load_documents(docs)] == ["a.md", "deep/er/b.MARKDOWN"]


def test_the_bundled_knowledge_base_is_found_as_package_data() -> None:
    assert bundled_kb().is_dir()
    documents = load_documents()

    assert documents
    assert all(d.source.endswith(".md") and "/" in d.source for d in documents)


def test_links_within_the_tree_are_read_once_and_links_out_of_it_bring_their_pages(
    write_docs: WriteDocs, tmp_path: Path
) -> None:
    docs = write_docs({"a.md": "# A\n\nalpha\n", "v2/b.md": "# B\n\nbeta\n"})
    (docs / "v2" / "up").symlink_to(docs, target_is_directory=True)  # a cycle
    (docs / "current").symlink_to(docs / "v2", target_is_directory=True)  # an alias
    (docs / "alias.md").symlink_to(docs / "a.md")
    outside = tmp_path / "shared-runbooks"
    (outside / "deep").mkdir(parents=True)
    (outside / "deep" / "c.md").write_text("# C\n\ngamma\n", encoding="utf-8")
    (outside / "deep" / "loop").symlink_to(outside, target_is_directory=True)
    (outside / "also").symlink_to(outside / "deep", target_is_directory=True)  # within it
    (docs / "shared").symlink_to(outside, target_is_directory=True)
    (docs / "shared-again").symlink_to(outside, target_is_directory=True)

    sources = [d.source for d in load_documents(docs)]

    assert sources == ["a.md", "shared/also/c.md", "v2/b.md"]  # `also` comes before `deep`


def test_pages_are_read_whole_whatever_their_size(tmp_path: Path) -> None:
    from lookup_knowledge.engine import corpus

    docs = tmp_path / "docs"
    docs.mkdir()
    big = ("# Big\n\n" + "word " * 700_000).encode()  # several reads of READ_SIZE
    assert len(big) > 3 * corpus.READ_SIZE
    (docs / "big.md").write_bytes(big)
    (docs / "empty.md").write_bytes(b"")
    (docs / "small.md").write_bytes("# 小\n\n内容\n".encode())
    assert corpus.read_sources(docs) == [
        ("big.md", big),
        ("empty.md", b""),
        ("small.md", "# 小\n\n内容\n".encode()),
    ]
