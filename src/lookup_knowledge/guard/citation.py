"""Citation and quote rules: may this citation rest on that ledger entry? (docs/guard.md#stages)

Pure: the entry comes in already rebuilt (`rebuild.py`). Every violation found is reported,
in a fixed order: what the citation says by itself, then the entry (exists, run, call,
READY), the kind, the entry's bytes and contract, the cited document, the quote. A citation
whose kind does not fit its entry is not searched for its document: there is none to find.
"""

from __future__ import annotations

from collections.abc import Iterable

from lookup_knowledge.domain.contract import RagEvidenceItem
from lookup_knowledge.guard.codes import Violation, ViolationCode, violation
from lookup_knowledge.guard.rebuild import Rebuilt
from lookup_knowledge.guard.report import CitationKind


def check_citation(
    rebuilt: Rebuilt | None,
    *,
    kind: CitationKind,
    document_id: str | None,
    quote: str | None,
    path: str,
) -> list[Violation]:
    """Every reason the citation at `path` may not rest on the entry (None: no entry)."""
    at = _Paths(path)
    found = _intrinsic(kind, document_id, quote, at)
    if rebuilt is None:
        found.append(
            violation(
                ViolationCode.NOT_FOUND,
                at.tool_call_id,
                "the run has no ledger entry for this tool call (never made in this run, "
                "or expired)",
            )
        )
        return found
    found.extend(_moved(rebuilt.head, at.tool_call_id))
    if not rebuilt.ready:
        return found  # nothing was shown to the agent; nothing further to compare
    kind_fits = rebuilt.evidence_status == kind.required_status
    if not kind_fits:
        found.append(
            violation(
                ViolationCode.KIND_MISMATCH,
                at.kind,
                f"a {kind.value} citation needs {kind.required_status.value}, "
                f"the entry has {rebuilt.evidence_status!r}",
            )
        )
    found.extend(_moved(rebuilt.tail, at.tool_call_id))
    if not kind_fits or rebuilt.result is None:
        return found  # a kind that does not fit has no document to look for
    if kind is not CitationKind.NORMAL or document_id is None:
        return found
    item = cited_item(rebuilt, document_id)
    if item is None:
        found.append(
            violation(
                ViolationCode.DOCUMENT_NOT_IN_RESULT,
                at.document_id,
                f"document {document_id!r} is not among the evidence the agent was shown",
            )
        )
    elif quote is not None and quote.strip() and not quote_in_excerpt(quote, item.excerpt):
        found.append(
            violation(
                ViolationCode.QUOTE_NOT_IN_EXCERPT,
                at.quote,
                f"the quote is not in the excerpt of {document_id!r} the agent was shown",
            )
        )
    return found


def cited_item(rebuilt: Rebuilt, document_id: str) -> RagEvidenceItem | None:
    """The evidence item of the rebuilt result with this document_id, if it was shown."""
    if rebuilt.result is None:
        return None
    for item in rebuilt.result.evidence:
        if item.document_id == document_id:
            return item
    return None


def quote_in_excerpt(quote: str, excerpt: str) -> bool:
    """Whether the quote appears in the excerpt once runs of whitespace count as one space."""
    return normalize_space(quote) in normalize_space(excerpt)


def normalize_space(text: str) -> str:
    """Runs of whitespace (as str.isspace says, Unicode included) become one space; ends go."""
    return " ".join(text.split())


def _intrinsic(
    kind: CitationKind, document_id: str | None, quote: str | None, at: _Paths
) -> list[Violation]:
    """What is wrong with the citation whatever the ledger holds."""
    found: list[Violation] = []
    if kind is CitationKind.NORMAL and document_id is None:
        found.append(
            violation(
                ViolationCode.DOCUMENT_REQUIRED,
                at.document_id,
                "a NORMAL citation must name the evidence[].document_id it cites",
            )
        )
    if kind is CitationKind.NEGATIVE_OBSERVATION and document_id is not None:
        found.append(
            violation(
                ViolationCode.UNEXPECTED_DOCUMENT,
                at.document_id,
                "a NEGATIVE_OBSERVATION says the search found nothing; it cites no document",
            )
        )
    if quote is not None:
        if not quote.strip():
            found.append(violation(ViolationCode.EMPTY_TEXT, at.quote, "the quote is blank"))
        elif document_id is None or kind is CitationKind.NEGATIVE_OBSERVATION:
            found.append(
                violation(
                    ViolationCode.QUOTE_WITHOUT_DOCUMENT,
                    at.quote,
                    "a quote needs the NORMAL citation of the document it is taken from",
                )
            )
    return found


def _moved(violations: Iterable[Violation], path: str) -> list[Violation]:
    return [v.model_copy(update={"path": path}) for v in violations]


class _Paths:
    __slots__ = ("document_id", "kind", "quote", "tool_call_id")

    def __init__(self, base: str) -> None:
        self.tool_call_id = f"{base}.tool_call_id"
        self.kind = f"{base}.kind"
        self.document_id = f"{base}.document_id"
        self.quote = f"{base}.quote"


__all__ = ["check_citation", "cited_item", "normalize_space", "quote_in_excerpt"]
