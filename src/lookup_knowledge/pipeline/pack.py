"""Station 3 (docs/pipeline.md#pack): the blocks as a char-budgeted context for humans, replays."""

from __future__ import annotations

from collections.abc import Sequence

from lookup_knowledge.domain.models import ContextPack, EvidenceBlock

STRATEGY = "ranked_evidence_char_budget"
SEPARATOR = "\n\n"
ELLIPSIS = "..."


def render_header(ordinal: int, block: EvidenceBlock) -> str:
    lines = [f"[Evidence {ordinal}]"]
    if block.source:
        lines.append(f"source: {block.source}")
    if block.breadcrumb:
        lines.append(f"breadcrumb: {block.breadcrumb}")
    lines.append(f"reasons: {', '.join(block.hit_reasons)}")
    lines.append("content:")
    return "\n".join(lines) + "\n"


def pack_context(blocks: Sequence[EvidenceBlock], *, char_budget: int) -> ContextPack:
    """Whole blocks while they fit; a block whose header fits is cut with `...`; else omitted."""
    parts: list[str] = []
    used = 0
    included: list[str] = []
    omitted: list[str] = []
    for ordinal, block in enumerate(blocks, start=1):
        label = block.source or block.evidence_key
        separator = SEPARATOR if parts else ""
        header = render_header(ordinal, block)
        room = char_budget - used - len(separator) - len(header)
        if room >= len(block.content):
            text = header + block.content
        elif room >= len(ELLIPSIS):
            text = header + block.content[: room - len(ELLIPSIS)] + ELLIPSIS
        else:
            omitted.append(label)
            continue
        parts.append(separator + text)
        used += len(separator) + len(text)
        included.append(label)
    return ContextPack(
        packed_text="".join(parts),
        strategy=STRATEGY,
        char_budget=char_budget,
        used_chars=used,
        included_sources=tuple(included),
        omitted_sources=tuple(omitted),
    )
