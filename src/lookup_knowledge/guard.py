"""Client-side citation verifier for EvidenceGuard implementers (docs/ledger.md).

See docs/ledger.md#what-a-verifier-relies-on for the checks.

`verify_citation` takes a ledger entry as served by `GET /ledger/{run_id}/{tool_call_id}`
and says whether a citation made by an agent may rest on it. It returns every violation
it finds, not only the first, so a guard can log the full picture.

The sha check is byte-exact: the raw text of the entry's `result` value is cut out of the
entry JSON as it stands (a small scan of the top-level object with the standard JSON
decoder), re-encoded as UTF-8 and hashed. It is not re-serialized, so any whitespace,
key order or escaping that differs from what the agent received is caught as
SHA_MISMATCH rather than normalized away. The same raw bytes are what
`RagToolResult.model_validate_json` checks strictly against docs/agent-contract.md.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
from pydantic import ValidationError

from lookup_knowledge.domain.contract import RagToolResult
from lookup_knowledge.domain.ledger import LedgerStatus, sha256_hex
from lookup_knowledge.domain.models import EvidenceStatus

ID_PATTERN = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")
_WHITESPACE = re.compile(r"[ \t\n\r]*")
_OPTIONAL_ITEM_FIELDS = ("source", "title", "breadcrumb")


class CitationKind(StrEnum):
    NORMAL = "NORMAL"  # cites evidence the agent was shown
    NEGATIVE_OBSERVATION = "NEGATIVE_OBSERVATION"  # cites that the search found nothing

    @property
    def required_status(self) -> EvidenceStatus:
        if self is CitationKind.NORMAL:
            return EvidenceStatus.EVIDENCE_FOUND
        return EvidenceStatus.NO_EVIDENCE


class ViolationCode(StrEnum):
    NOT_FOUND = "NOT_FOUND"  # no entry for these ids
    MALFORMED_ENTRY = "MALFORMED_ENTRY"  # the entry is not a ledger entry at all
    RUN_MISMATCH = "RUN_MISMATCH"  # the entry belongs to another run
    TOOL_CALL_MISMATCH = "TOOL_CALL_MISMATCH"  # entry / result / citation name other calls
    NOT_READY = "NOT_READY"  # PENDING or FAILED: nothing was shown to the agent
    KIND_MISMATCH = "KIND_MISMATCH"  # evidence_status does not fit the citation kind
    CONTRACT_VIOLATION = "CONTRACT_VIOLATION"  # result is not strictly a RagToolResult
    SHA_MISMATCH = "SHA_MISMATCH"  # result bytes do not hash to result_sha256
    DOCUMENT_NOT_IN_RESULT = "DOCUMENT_NOT_IN_RESULT"  # cited document_id was not shown


@dataclass(frozen=True, slots=True)
class Violation:
    code: ViolationCode
    message: str

    def __str__(self) -> str:
        return f"{self.code.value}: {self.message}"


def verify_citation(
    entry_json: bytes | None,
    *,
    run_id: str,
    kind: CitationKind,
    document_id: str | None = None,
    tool_call_id: str | None = None,
) -> list[Violation]:
    """Every reason the citation may not rest on this ledger entry; empty when it may."""
    if entry_json is None:
        return [_v(ViolationCode.NOT_FOUND, "no ledger entry for this tool call")]
    try:
        text = entry_json.decode("utf-8")
        spans = _top_level_spans(text)
        entry = json.loads(text)
    except (UnicodeDecodeError, ValueError) as exc:
        return [_v(ViolationCode.MALFORMED_ENTRY, f"entry is not a JSON object: {exc}")]
    for name in ("run_id", "tool_call_id", "status"):
        if not isinstance(entry.get(name), str):
            return [_v(ViolationCode.MALFORMED_ENTRY, f"entry has no string `{name}`")]

    found: list[Violation] = []
    if entry["run_id"] != run_id:
        found.append(
            _v(
                ViolationCode.RUN_MISMATCH,
                f"entry belongs to run {entry['run_id']!r}, not {run_id!r}",
            )
        )
    if tool_call_id is not None and entry["tool_call_id"] != tool_call_id:
        found.append(
            _v(
                ViolationCode.TOOL_CALL_MISMATCH,
                f"entry is for tool call {entry['tool_call_id']!r}, not {tool_call_id!r}",
            )
        )
    if entry["status"] != LedgerStatus.READY:
        found.append(_v(ViolationCode.NOT_READY, f"entry status is {entry['status']!r}"))
        return found  # no result was shown to the agent; nothing further to compare

    if entry.get("evidence_status") != kind.required_status:
        found.append(
            _v(
                ViolationCode.KIND_MISMATCH,
                f"a {kind.value} citation needs {kind.required_status.value}, "
                f"the entry has {entry.get('evidence_status')!r}",
            )
        )

    result_spans = spans.get("result", [])
    if len(result_spans) != 1:
        found.append(
            _v(
                ViolationCode.CONTRACT_VIOLATION,
                f"entry must hold exactly one `result`, it holds {len(result_spans)}",
            )
        )
        return found
    start, end = result_spans[0]
    raw = text[start:end].encode("utf-8")

    expected_sha = entry.get("result_sha256")
    actual_sha = sha256_hex(raw)
    if expected_sha != actual_sha:
        found.append(
            _v(
                ViolationCode.SHA_MISMATCH,
                f"result bytes hash to {actual_sha}, entry says {expected_sha!r}",
            )
        )

    try:
        result = RagToolResult.model_validate_json(raw)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '<result>'}: {err['msg']}"
            for err in exc.errors()
        )
        found.append(
            _v(ViolationCode.CONTRACT_VIOLATION, f"result is not the contract: {problems}")
        )
        return found

    found.extend(_v(ViolationCode.CONTRACT_VIOLATION, p) for p in _shape_problems(raw, result))
    if result.evidence_status != entry.get("evidence_status"):
        found.append(
            _v(
                ViolationCode.CONTRACT_VIOLATION,
                f"result says {result.evidence_status.value}, "
                f"the entry says {entry.get('evidence_status')!r}",
            )
        )
    if result.tool_call_id != entry["tool_call_id"]:
        found.append(
            _v(
                ViolationCode.TOOL_CALL_MISMATCH,
                f"result is for tool call {result.tool_call_id!r}, "
                f"the entry for {entry['tool_call_id']!r}",
            )
        )
    if document_id is not None and document_id not in {e.document_id for e in result.evidence}:
        found.append(
            _v(
                ViolationCode.DOCUMENT_NOT_IN_RESULT,
                f"document {document_id!r} is not among the evidence the agent was shown",
            )
        )
    return found


def _v(code: ViolationCode, message: str) -> Violation:
    return Violation(code=code, message=message)


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


def _shape_problems(raw: bytes, result: RagToolResult) -> list[str]:
    """Rules of docs/agent-contract.md that a field-by-field schema cannot express."""
    problems: list[str] = []
    data: dict[str, Any] = json.loads(raw)
    if result.returned_count != len(result.evidence):
        problems.append(
            f"returned_count {result.returned_count} but {len(result.evidence)} evidence items"
        )
    has_evidence = bool(result.evidence)
    if has_evidence != (result.evidence_status is EvidenceStatus.EVIDENCE_FOUND):
        problems.append(
            f"evidence_status {result.evidence_status.value} with "
            f"{len(result.evidence)} evidence items"
        )
    if result.relevance_level is not None and not has_evidence:
        problems.append("relevance_level present without evidence")
    for key in ("evidence", "relevance_level"):
        if key in data and data[key] in (None, []):
            problems.append(f"`{key}` sent empty or null instead of omitted")
    for n, item in enumerate(data.get("evidence") or []):
        for key in _OPTIONAL_ITEM_FIELDS:
            if key in item and item[key] in (None, ""):
                problems.append(f"`evidence[{n}].{key}` sent empty or null instead of omitted")
    return problems


# -- CLI: lookup-knowledge verify-citation ------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """`lookup-knowledge verify-citation`: 0 valid, 1 violations, 2 usage or network error."""
    parser = _parser()
    try:
        args = parser.parse_args(argv)
        if args.url is not None and args.tool_call_id is None:
            parser.error("--url needs --tool-call-id")
        for flag, value in (("--run-id", args.run_id), ("--tool-call-id", args.tool_call_id)):
            if value is not None and not ID_PATTERN.fullmatch(value):
                parser.error(f"{flag} must match {ID_PATTERN.pattern}")
    except SystemExit as exc:  # argparse exits on --help and on usage errors
        return exc.code if isinstance(exc.code, int) else 2

    try:
        if args.url is not None:
            entry = _fetch(
                args.url, args.run_id, args.tool_call_id, token=args.token, timeout_s=args.timeout
            )
        else:
            entry = _read(args.entry_file)
    except _CliError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    violations = verify_citation(
        entry,
        run_id=args.run_id,
        kind=args.kind,
        document_id=args.document_id,
        tool_call_id=args.tool_call_id,
    )
    for violation in violations:
        print(violation)
    if not violations:
        print("OK")
    return 1 if violations else 0


class _CliError(Exception):
    pass


def _kind(value: str) -> CitationKind:
    try:
        return CitationKind(value.strip().upper().replace("-", "_"))
    except ValueError:
        choices = ", ".join(k.value for k in CitationKind)
        raise argparse.ArgumentTypeError(f"kind must be one of {choices}") from None


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lookup-knowledge verify-citation",
        description="Check one agent citation against the evidence ledger.",
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--url", metavar="BASE", help="service base URL; fetches BASE/ledger/RUN_ID/TOOL_CALL_ID"
    )
    source.add_argument(
        "--entry-file", metavar="FILE", help="a ledger entry saved as JSON ('-' reads stdin)"
    )
    parser.add_argument("--token", help="bearer token for the /ledger routes")
    parser.add_argument("--run-id", required=True, help="the run that made the citation")
    parser.add_argument("--tool-call-id", help="the cited tool call (required with --url)")
    parser.add_argument("--kind", required=True, type=_kind, help="NORMAL or NEGATIVE_OBSERVATION")
    parser.add_argument("--document-id", help="the cited evidence[].document_id")
    parser.add_argument("--timeout", type=float, default=5.0, help="HTTP timeout in seconds")
    return parser


def _fetch(
    base: str, run_id: str, tool_call_id: str, *, token: str | None, timeout_s: float
) -> bytes | None:
    url = f"{base.rstrip('/')}/ledger/{quote(run_id, safe='')}/{quote(tool_call_id, safe='')}"
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        response = httpx.get(url, headers=headers, timeout=timeout_s)
    except httpx.HTTPError as exc:
        raise _CliError(f"cannot fetch {url}: {type(exc).__name__}: {exc}") from exc
    if response.status_code == 404:
        return None
    if response.status_code != 200:
        raise _CliError(f"{url} answered HTTP {response.status_code}: {response.text[:200]}")
    return response.content


def _read(path: str) -> bytes:
    try:
        return sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    except OSError as exc:
        raise _CliError(f"cannot read {path}: {exc}") from exc


__all__ = [
    "ID_PATTERN",
    "CitationKind",
    "Violation",
    "ViolationCode",
    "main",
    "verify_citation",
]
