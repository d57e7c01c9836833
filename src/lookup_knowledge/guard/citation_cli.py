"""`lookup-knowledge verify-citation`: one citation against its ledger entry.

0 valid, 1 violations, 2 usage, input or network error. The entry comes from a file or from
`GET /ledger/{run_id}/{tool_call_id}` (token from --token or LOOKUP_KNOWLEDGE_TOKEN).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from urllib.parse import quote

from lookup_knowledge.guard.cli_support import CliError, get, read_input, token_from
from lookup_knowledge.guard.report import ID_PATTERN, CitationKind
from lookup_knowledge.guard.verify import verify_citation

_ID = re.compile(ID_PATTERN)


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    try:
        args = parser.parse_args(argv)
        if args.url is not None and args.tool_call_id is None:
            parser.error("--url needs --tool-call-id")
        for flag, value in (("--run-id", args.run_id), ("--tool-call-id", args.tool_call_id)):
            if value is not None and not _ID.fullmatch(value):
                parser.error(f"{flag} must match {_ID.pattern}")
    except SystemExit as exc:  # argparse exits on --help and on usage errors
        return exc.code if isinstance(exc.code, int) else 2

    try:
        if args.url is not None:
            entry = _fetch(args.url, args.run_id, args.tool_call_id, args.token, args.timeout)
        else:
            entry = read_input(args.entry_file)
    except CliError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    violations = verify_citation(
        entry,
        run_id=args.run_id,
        kind=args.kind,
        document_id=args.document_id,
        tool_call_id=args.tool_call_id,
        quote=args.quote,
    )
    for found in violations:
        print(found)
    if not violations:
        print("OK")
    return 1 if violations else 0


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
    parser.add_argument(
        "--token", help="bearer token of the ledger role (default: $LOOKUP_KNOWLEDGE_TOKEN)"
    )
    parser.add_argument("--run-id", required=True, help="the run that made the citation")
    parser.add_argument("--tool-call-id", help="the cited tool call (required with --url)")
    parser.add_argument("--kind", required=True, type=_kind, help="NORMAL or NEGATIVE_OBSERVATION")
    parser.add_argument("--document-id", help="the cited evidence[].document_id (NORMAL)")
    parser.add_argument("--quote", help="words the citation quotes from that document's excerpt")
    parser.add_argument("--timeout", type=float, default=5.0, help="HTTP timeout in seconds")
    return parser


def _fetch(
    base: str, run_id: str, tool_call_id: str, token: str | None, timeout_s: float
) -> bytes | None:
    url = f"{base.rstrip('/')}/ledger/{quote(run_id, safe='')}/{quote(tool_call_id, safe='')}"
    response = get(url, token=token_from(token), timeout_s=timeout_s)
    if response.status_code == 404:
        return None
    if response.status_code != 200:
        raise CliError(f"{url} answered HTTP {response.status_code}: {response.text[:200]}")
    return response.content


__all__ = ["main"]
