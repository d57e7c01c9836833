"""Markdown chunking: breadcrumbs, size bounds, stable ids, metadata."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from lookup_knowledge.engine import markdown
from lookup_knowledge.engine.corpus import load_documents
from lookup_knowledge.engine.markdown import Document, parse_document, split_front_matter

RUNBOOK = """---
category: cache
lang: en
tags: [redis, memory]
---
# Redis memory

Intro paragraph.

## Symptoms

Writes fail.

## Steps

### Check policy

Run CONFIG GET.

### Free memory

Delete big keys.

## References

See the docs.
"""


def _doc(text: str, source: str = "cache/redis.md", max_chars: int = 800) -> Document:
    return parse_document(source, text.encode("utf-8"), max_chars=max_chars)


def test_heading_path_becomes_breadcrumb() -> None:
    doc = _doc(RUNBOOK)

    assert [c.breadcrumb for c in doc.chunks] == [
        "Redis memory",
        "Redis memory > Symptoms",
        "Redis memory > Steps > Check policy",
        "Redis memory > Steps > Free memory",
        "Redis memory > References",
    ]
    assert [c.content for c in doc.chunks] == [
        "Intro paragraph.",
        "Writes fail.",
        "Run CONFIG GET.",
        "Delete big keys.",
        "See the docs.",
    ]


def test_first_h1_is_the_title_of_every_chunk() -> None:
    doc = _doc(RUNBOOK)

    assert doc.title == "Redis memory"
    assert {c.title for c in doc.chunks} == {"Redis memory"}


def test_title_falls_back_to_front_matter_then_to_the_file_name() -> None:
    with_meta = _doc("---\ntitle: From meta\n---\n## Part\n\nText.\n")
    bare = _doc("## Part\n\nText.\n", source="ops/disk-full.zh.md")

    assert with_meta.chunks[0].breadcrumb == "From meta > Part"
    assert bare.chunks[0].breadcrumb == "disk-full > Part"


def test_a_later_heading_closes_deeper_levels() -> None:
    doc = _doc("# T\n## A\n### A1\n#### A1x\nx\n## B\nb\n### B1\nb1\n")

    assert [c.breadcrumb for c in doc.chunks] == ["T > A > A1 > A1x", "T > B", "T > B > B1"]


def test_headings_inside_code_fences_are_not_sections() -> None:
    doc = _doc("# T\n\n## Shell\n\n```bash\n# not a heading\necho hi\n```\n")

    assert len(doc.chunks) == 1
    assert doc.chunks[0].breadcrumb == "T > Shell"
    assert "# not a heading" in doc.chunks[0].content


def test_a_fence_closes_only_on_its_own_kind_and_length() -> None:
    text = (
        "# T\n\n## Code\n\n````\n```\n# in\n~~~~\n# still in\n````\n"
        "    # indented code\n## After\n\ntext\n~~~\n# never closed\n"
    )
    doc = _doc(text)

    assert [c.breadcrumb for c in doc.chunks] == ["T > Code", "T > After"]
    assert "# still in" in doc.chunks[0].content
    assert "    # indented code" in doc.chunks[0].content
    assert doc.chunks[1].content.endswith("# never closed")


def test_the_title_is_the_first_h1_outside_code() -> None:
    doc = _doc("```\n# Not the title\n```\n\n## Intro\n\nx\n\n# Real title\n\ny\n")

    assert {c.title for c in doc.chunks} == {"Real title"}
    assert [c.breadcrumb for c in doc.chunks] == ["Real title", "Real title > Intro", "Real title"]


def test_sections_without_text_yield_no_chunk() -> None:
    doc = _doc("# T\n\n## Empty\n\n## Full\n\ntext\n")

    assert [c.breadcrumb for c in doc.chunks] == ["T > Full"]


def test_front_matter_is_metadata_not_content() -> None:
    doc = _doc(RUNBOOK)

    assert doc.front_matter["lang"] == "en"
    assert doc.tags == ("redis", "memory")
    assert all("category:" not in c.content for c in doc.chunks)


def test_front_matter_category_wins_over_the_folder_name() -> None:
    assert _doc(RUNBOOK, source="redis/redis.md").category == "cache"


def test_top_folder_is_the_category_without_front_matter() -> None:
    assert _doc("# T\n\ntext\n", source="kafka/lag/consumer.md").category == "kafka"
    assert _doc("# T\n\ntext\n", source="top-level.md").category == ""


def test_unterminated_front_matter_is_treated_as_text() -> None:
    meta, body = split_front_matter("---\nnot closed\n# T\n")

    assert meta == {}
    assert body.startswith("---")


def test_long_section_is_split_on_paragraph_boundaries() -> None:
    paragraphs = [f"Paragraph {i} says something useful about the system." for i in range(30)]
    doc = _doc("# T\n\n## Long\n\n" + "\n\n".join(paragraphs) + "\n", max_chars=300)

    assert len(doc.chunks) > 1
    assert all(len(c.content) <= 300 for c in doc.chunks)
    assert all(c.breadcrumb == "T > Long" for c in doc.chunks)
    pieces = [p for c in doc.chunks for p in c.content.split("\n\n")]
    assert pieces == paragraphs  # every paragraph whole, in order, none lost


def test_long_paragraph_is_split_between_sentences() -> None:
    english = " ".join(f"Sentence number {i} ends here." for i in range(40))
    chinese = "".join(f"这是第{i}句话，内容完整。" for i in range(60))
    doc = _doc(f"# T\n\n{english}\n\n{chinese}\n", max_chars=200)

    assert all(len(c.content) <= 200 for c in doc.chunks)
    for chunk in doc.chunks:
        assert re.search(r"(\.|。)$", chunk.content), chunk.content
    assert "".join(c.content for c in doc.chunks).replace(" ", "") == (english + chinese).replace(
        " ", ""
    )


def test_a_long_list_is_split_between_its_items() -> None:
    intro = "The rule has several variants, each with its own threshold and scope."
    items = [
        f"- `Variant_{i}` - the error rate of traffic to a specific\n  namespace {i} exceeds"
        " its threshold"
        for i in range(12)
    ]
    doc = _doc(f"# T\n\n{intro}\n\n" + "\n".join(items) + "\n", max_chars=400)

    assert len(doc.chunks) > 2 and all(len(c.content) <= 400 for c in doc.chunks)
    listed = [c.content.split("\n\n")[-1] for c in doc.chunks if "Variant_" in c.content]
    # Every chunk of the list starts at an item and holds whole items: no item, nor the name
    # inside it, is cut (the list is one paragraph and has no sentence end to split at).
    assert all(c.startswith("- `Variant_") for c in listed)
    assert "\n".join(listed) == "\n".join(items)


def test_a_sub_item_stays_with_its_item() -> None:
    items = [
        "\n".join(
            [
                f"- Check pod template parameters such as number {i}:",
                *(f"  - sub-item {j} of item {i}, a rule no node satisfies" for j in range(i % 4)),
            ]
        )
        for i in range(10)
    ]
    text = "# T\n\n## Diagnosis\n\n" + "\n".join(items) + "\n"
    for max_chars in (220, 250, 300, 400):  # each item fits (the longest is 201)
        doc = _doc(text, max_chars=max_chars)

        assert len(doc.chunks) > 1
        assert all(c.content.startswith("- Check pod template") for c in doc.chunks), max_chars
        assert "\n".join(c.content for c in doc.chunks) == "\n".join(items)


def test_a_long_table_is_split_between_its_rows() -> None:
    rows = ["| metric | meaning |", "|---|---|"] + [
        f"| `metric_{i}_total` | what the {i}th counter counts |" for i in range(14)
    ]
    doc = _doc("# T\n\n" + "\n".join(rows) + "\n", max_chars=200)

    assert len(doc.chunks) > 1 and all(len(c.content) <= 200 for c in doc.chunks)
    assert all(line.startswith("|") for c in doc.chunks for line in c.content.split("\n"))
    assert "\n".join(c.content for c in doc.chunks) == "\n".join(rows)


def test_a_cut_at_a_space_leaves_no_sliver() -> None:
    # The only space is near the start: cutting there would leave a piece of two letters.
    doc = _doc("# T\n\nab " + "x" * 500 + "\n", max_chars=200)

    assert all(len(c.content) > 100 for c in doc.chunks[:-1])
    assert "".join(c.content for c in doc.chunks).replace(" ", "") == "ab" + "x" * 500


def test_a_sentence_longer_than_a_chunk_is_cut_at_a_space() -> None:
    words = [f"word{i:03d}" for i in range(200)]  # 1600 characters and no sentence end
    doc = _doc("# T\n\n" + " ".join(words) + "\n", max_chars=300)

    assert len(doc.chunks) > 1 and all(len(c.content) <= 300 for c in doc.chunks)
    assert [w for c in doc.chunks for w in c.content.split()] == words  # no word broken


def test_pieces_of_a_split_section_are_of_similar_size() -> None:
    text = "\n\n".join("x" * 90 for _ in range(11))  # 1010 chars: too long for one chunk
    doc = _doc(f"# T\n\n{text}\n", max_chars=800)

    sizes = [len(c.content) for c in doc.chunks]
    assert len(sizes) == 2
    assert max(sizes) - min(sizes) <= 100  # not 800 + 208


def test_fenced_code_block_that_fits_stays_whole() -> None:
    code = "```sql\n" + "\n".join(f"SELECT {i};" for i in range(20)) + "\n```"
    prose = "\n\n".join(["Words before the code block."] * 6)
    doc = _doc(f"# T\n\n{prose}\n\n{code}\n\n{prose}\n", max_chars=300)

    assert all(len(c.content) <= 300 for c in doc.chunks)
    assert any(code in c.content for c in doc.chunks)


def test_oversized_code_block_is_split_into_fenced_pieces() -> None:
    code = "```bash\n" + "\n".join(f"echo line-{i:03d}" for i in range(60)) + "\n```"
    doc = _doc(f"# T\n\n{code}\n", max_chars=200)

    assert len(doc.chunks) > 1
    for chunk in doc.chunks:
        assert len(chunk.content) <= 200
        assert chunk.content.startswith("```bash\n")
        assert chunk.content.endswith("\n```")
    lines = [line for c in doc.chunks for line in c.content.split("\n") if line.startswith("echo")]
    assert lines == [f"echo line-{i:03d}" for i in range(60)]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.text(alphabet="abc 。.\n", min_size=0, max_size=400),
            st.sampled_from(["## H2", "### H3", "# H1", "```", "---", "\n\n"]),
        ),
        max_size=40,
    ),
    st.integers(min_value=40, max_value=500),
)
def test_no_chunk_exceeds_the_size_bound(parts: list[str], max_chars: int) -> None:
    doc = _doc("\n".join(parts), max_chars=max_chars)

    assert all(0 < len(c.content) <= max_chars for c in doc.chunks)
    assert [c.index for c in doc.chunks] == list(range(len(doc.chunks)))


def test_evidence_key_is_the_document_id_and_chunk_number() -> None:
    doc = _doc(RUNBOOK, source="cache/redis.md")

    assert re.fullmatch(r"cache-redis-md-[0-9a-f]{8}", doc.document_id)
    assert [c.evidence_key for c in doc.chunks] == [
        f"{doc.document_id}#chunk-{n}" for n in range(len(doc.chunks))
    ]


def test_unchanged_files_keep_their_ids_across_re_index(small_kb: Path) -> None:
    first = [c.evidence_key for d in load_documents(small_kb) for c in d.chunks]
    second = [c.evidence_key for d in load_documents(small_kb) for c in d.chunks]

    assert first == second
    assert len(set(first)) == len(first)


def test_a_changed_file_gets_new_ids_and_the_others_keep_theirs(small_kb: Path) -> None:
    before = {d.source: d.document_id for d in load_documents(small_kb)}
    path = small_kb / "streaming" / "kafka-lag.md"
    path.write_text(path.read_text(encoding="utf-8") + "\nOne more line.\n", encoding="utf-8")
    after = {d.source: d.document_id for d in load_documents(small_kb)}

    assert after["streaming/kafka-lag.md"] != before["streaming/kafka-lag.md"]
    assert {k: v for k, v in after.items() if k != "streaming/kafka-lag.md"} == {
        k: v for k, v in before.items() if k != "streaming/kafka-lag.md"
    }


def test_the_same_content_at_another_path_is_another_document() -> None:
    assert _doc(RUNBOOK, source="a/x.md").document_id != _doc(RUNBOOK, source="b/x.md").document_id


def test_source_is_the_posix_path_relative_to_the_docs_root(small_kb: Path) -> None:
    sources = [d.source for d in load_documents(small_kb)]

    assert sources == [
        "gateway/gateway-timeout.zh.md",
        "redis/redis-memory.md",
        "streaming/kafka-lag.md",
    ]


def test_other_chunking_rules_give_other_ids() -> None:
    assert _doc(RUNBOOK, max_chars=800).document_id != _doc(RUNBOOK, max_chars=400).document_id


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("#`~ \n\ta")), max_size=80))
def test_the_heading_scan_finds_what_a_line_by_line_pass_finds(body: str) -> None:
    expected = []
    start = 0
    for line, in_code in markdown._fenced_lines(body):
        heading = None if in_code else markdown._heading(line)
        if heading is not None:
            expected.append((start, start + len(line), *heading))
        start += len(line) + 1

    assert markdown._headings(body) == expected
