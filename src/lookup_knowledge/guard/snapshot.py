"""The evidence snapshot: what the report's citations resolve to, rebuilt from the ledger.

See docs/guard.md#evidence-snapshot. The model's retelling of its evidence never enters the
snapshot: each item is the evidence item of the ledgered result, taken only from an entry that
has no violation of its own (same run and call, READY, bytes and contract intact).
"""

from __future__ import annotations

from lookup_knowledge.guard.citation import cited_item
from lookup_knowledge.guard.rebuild import Rebuilt
from lookup_knowledge.guard.report import CitationKind, SnapshotItem


class SnapshotBuilder:
    """Collects each cited (tool_call_id, document_id) once, in the order first cited."""

    def __init__(self) -> None:
        self._items: dict[tuple[str, str], SnapshotItem] = {}

    def add(
        self,
        kind: CitationKind,
        tool_call_id: str,
        document_id: str | None,
        rebuilt: Rebuilt | None,
    ) -> None:
        """Take the item a NORMAL citation resolves to, if its entry is beyond reproach."""
        if kind is not CitationKind.NORMAL or document_id is None:
            return
        if rebuilt is None or not rebuilt.trusted:
            return
        key = (tool_call_id, document_id)
        if key in self._items:
            return
        item = cited_item(rebuilt, document_id)
        if item is None:
            return
        self._items[key] = SnapshotItem(
            tool_call_id=tool_call_id,
            document_id=item.document_id,
            source=item.source,
            title=item.title,
            breadcrumb=item.breadcrumb,
            excerpt=item.excerpt,
        )

    def items(self) -> list[SnapshotItem]:
        return list(self._items.values())


__all__ = ["SnapshotBuilder"]
