"""docs/pipeline.md#pack: the char-budgeted context pack."""

from __future__ import annotations

from builders import block
from lookup_knowledge.pipeline.pack import STRATEGY, pack_context, render_header


def test_a_block_is_rendered_with_its_header_lines() -> None:
    pack = pack_context(
        [block("gw#chunk-1", "Check the upstream timeout first ...")], char_budget=4000
    )
    assert pack.packed_text == (
        "[Evidence 1]\n"
        "source: runbooks/gw.md\n"
        "breadcrumb: gw > Steps\n"
        "reasons: semantic_rank:1\n"
        "content:\n"
        "Check the upstream timeout first ..."
    )
    assert pack.strategy == STRATEGY == "ranked_evidence_char_budget"
    assert pack.used_chars == len(pack.packed_text)
    assert pack.included_sources == ("runbooks/gw.md",)
    assert pack.omitted_sources == ()


def test_blocks_are_joined_by_one_blank_line_in_order() -> None:
    pack = pack_context([block("a#chunk-0", "A"), block("b#chunk-0", "B")], char_budget=4000)
    first, second = pack.packed_text.split("\n\n")
    assert first.startswith("[Evidence 1]") and first.endswith("A")
    assert second.startswith("[Evidence 2]") and second.endswith("B")


def test_a_block_whose_header_fits_but_not_its_content_is_cut_with_an_ellipsis() -> None:
    blocks = [block("a#chunk-0", "x" * 100)]
    budget = len(render_header(1, blocks[0])) + 20
    pack = pack_context(blocks, char_budget=budget)
    assert pack.packed_text.endswith("x" * 17 + "...")
    assert pack.used_chars == budget
    assert pack.included_sources == ("runbooks/a.md",)


def test_a_block_whose_header_does_not_fit_is_omitted_and_its_source_listed() -> None:
    first = block("a#chunk-0", "A" * 50)
    budget = len(render_header(1, first)) + 50 + 10
    pack = pack_context([first, block("b#chunk-0", "B" * 50)], char_budget=budget)
    assert pack.included_sources == ("runbooks/a.md",)
    assert pack.omitted_sources == ("runbooks/b.md",)
    assert "[Evidence 2]" not in pack.packed_text


def test_used_chars_never_exceed_the_budget() -> None:
    blocks = [block(f"d{i}#chunk-0", "word " * 300) for i in range(5)]
    for budget in (1, 10, 100, 500, 1000, 4000):
        pack = pack_context(blocks, char_budget=budget)
        assert pack.used_chars <= budget
        assert len(pack.packed_text) == pack.used_chars
        assert len(pack.included_sources) + len(pack.omitted_sources) == 5


def test_missing_source_and_breadcrumb_lines_are_left_out() -> None:
    pack = pack_context([block("a#chunk-0", "A", source=None, breadcrumb=None)], char_budget=4000)
    assert "source:" not in pack.packed_text and "breadcrumb:" not in pack.packed_text
    assert pack.included_sources == ("a#chunk-0",)


def test_an_empty_pack_uses_nothing() -> None:
    pack = pack_context([], char_budget=4000)
    assert (pack.packed_text, pack.used_chars) == ("", 0)
