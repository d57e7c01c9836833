"""One ledger entry as a verifier reads it, from the store or from the JSON a client fetched.

See docs/ledger.md#entry. Both sources give the same view, so the same rules judge a citation
whether the guard route read the entry from the store or a client fetched it from
`GET /ledger/{run_id}/{tool_call_id}`.

From JSON, the raw text of each top-level `result` member is cut out of the entry as it stands
(a small scan of the top-level object with the standard JSON decoder) and re-encoded as UTF-8.
It is never re-serialized, so whitespace, key order or escaping that differs from what the agent
received is caught by the sha check instead of being normalized away.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from lookup_knowledge.domain.ledger import LedgerEntry

_WHITESPACE = re.compile(r"[ \t\n\r]*")


@dataclass(frozen=True, slots=True)
class LedgeredCall:
    """What a verifier relies on in one entry; `results` are the raw bytes of each `result`."""

    run_id: str
    tool_call_id: str
    status: str
    evidence_status: str | None
    result_sha256: str | None
    results: tuple[bytes, ...]  # exactly one in a well-formed entry (b"null" unless READY)


class MalformedEntry(ValueError):
    """The bytes are not a ledger entry at all."""


def from_entry(entry: LedgerEntry) -> LedgeredCall:
    """The view of an entry read from the store (its `result` is the stored body, verbatim)."""
    return LedgeredCall(
        run_id=entry.run_id,
        tool_call_id=entry.tool_call_id,
        status=entry.status.value,
        evidence_status=entry.evidence_status,
        result_sha256=entry.result_sha256,
        results=(entry.body if entry.body is not None else b"null",),
    )


def from_json(entry_json: bytes) -> LedgeredCall:
    """The view of an entry as `GET /ledger/{run_id}/{tool_call_id}` serves it."""
    try:
        text = entry_json.decode("utf-8")
        spans = _top_level_spans(text)
        entry = json.loads(text)
    except (UnicodeDecodeError, ValueError) as exc:
        raise MalformedEntry(f"entry is not a JSON object: {exc}") from exc
    for name in ("run_id", "tool_call_id", "status"):
        if not isinstance(entry.get(name), str):
            raise MalformedEntry(f"entry has no string `{name}`")
    evidence_status = entry.get("evidence_status")
    result_sha256 = entry.get("result_sha256")
    return LedgeredCall(
        run_id=entry["run_id"],
        tool_call_id=entry["tool_call_id"],
        status=entry["status"],
        evidence_status=evidence_status if isinstance(evidence_status, str) else None,
        result_sha256=result_sha256 if isinstance(result_sha256, str) else None,
        results=tuple(text[start:end].encode("utf-8") for start, end in spans.get("result", [])),
    )


def _top_level_spans(text: str) -> dict[str, list[tuple[int, int]]]:
    """Character spans of each top-level value of a JSON object, by key (duplicates kept)."""
    decoder = json.JSONDecoder()

    def skip(i: int) -> int:
        match = _WHITESPACE.match(text, i)
        return match.end() if match else i

    i = skip(0)
    if text[i : i + 1] != "{":
        raise ValueError("not an object")
    i = skip(i + 1)
    spans: dict[str, list[tuple[int, int]]] = {}
    if text[i : i + 1] == "}":
        i += 1
    else:
        while True:
            if text[i : i + 1] != '"':
                raise ValueError(f"expected a key at {i}")
            key, i = decoder.raw_decode(text, i)
            i = skip(i)
            if text[i : i + 1] != ":":
                raise ValueError(f"expected ':' at {i}")
            start = skip(i + 1)
            _, end = decoder.raw_decode(text, start)
            spans.setdefault(key, []).append((start, end))
            i = skip(end)
            if text[i : i + 1] == "}":
                i += 1
                break
            if text[i : i + 1] != ",":
                raise ValueError(f"expected ',' or '}}' at {i}")
            i = skip(i + 1)
    if skip(i) != len(text):
        raise ValueError("trailing data after the object")
    return spans


__all__ = ["LedgeredCall", "MalformedEntry", "from_entry", "from_json"]
