"""`lookup-knowledge verify-report FILE --run RUN [--json]`: a whole report, checked by the service.

Sends FILE (a report as JSON, '-' reads stdin) to POST /guard/verify of the service at --url or
$LOOKUP_KNOWLEDGE_URL (default http://127.0.0.1:8080), with the bearer token of the ledger role
from $LOOKUP_KNOWLEDGE_TOKEN: never from the command line, where other users can read it.

Exit status: 0 no violation, 1 violations, 2 usage, input, network or HTTP error.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Sequence

from lookup_knowledge.guard.cli_support import (
    DEFAULT_URL,
    TOKEN_ENV,
    URL_ENV,
    CliError,
    post_json,
    read_input,
    token_from,
)
from lookup_knowledge.guard.report import ID_PATTERN

_ID = re.compile(ID_PATTERN)


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    try:
        args = parser.parse_args(argv)
        if not _ID.fullmatch(args.run):
            parser.error(f"--run must match {_ID.pattern}")
    except SystemExit as exc:  # argparse exits on --help and on usage errors
        return exc.code if isinstance(exc.code, int) else 2

    base = (args.url or os.environ.get(URL_ENV) or DEFAULT_URL).rstrip("/")
    try:
        body = _request_body(read_input(args.file), args.file, args.run)
        response = post_json(
            f"{base}/guard/verify", body, token=token_from(None), timeout_s=args.timeout
        )
    except CliError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    if response.status_code != 200:
        if args.json:
            print(response.text)
        print(f"error: {_describe(response.status_code, response.text)}", file=sys.stderr)
        return 2
    answer = response.json()
    if args.json:
        print(response.text)
    elif answer["ok"]:
        print(f"OK ({len(answer['evidence_snapshot'])} cited evidence items)")
    else:
        for found in answer["violations"]:
            print(f"{found['code']} at {found['path']}: {found['message']}")
    return 0 if answer["ok"] else 1


def _request_body(raw: bytes, name: str, run_id: str) -> bytes:
    try:
        report = json.loads(raw)
    except (UnicodeDecodeError, ValueError) as exc:
        raise CliError(f"{name} is not JSON: {exc}") from exc
    if not isinstance(report, dict):
        raise CliError(f"{name} must hold a JSON object (the report)")
    return json.dumps({"run_id": run_id, "report": report}, ensure_ascii=False).encode()


def _describe(status: int, text: str) -> str:
    try:
        error = json.loads(text)["error"]
        detail = f"{error['code']}: {error['message']}"
        if error.get("details"):
            detail += f" {json.dumps(error['details'], ensure_ascii=False)[:500]}"
    except (ValueError, KeyError, TypeError):
        detail = text[:200]
    return f"HTTP {status} {detail}"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lookup-knowledge verify-report",
        description="Check an agent's whole report against the evidence ledger of its run. "
        f"The bearer token is read from ${TOKEN_ENV}.",
    )
    parser.add_argument("file", metavar="FILE", help="the report as JSON ('-' reads stdin)")
    parser.add_argument("--run", "--run-id", required=True, help="the run that wrote the report")
    parser.add_argument("--json", action="store_true", help="print the service's JSON answer")
    parser.add_argument(
        "--url", metavar="BASE", help=f"service base URL (default: ${URL_ENV} or {DEFAULT_URL})"
    )
    parser.add_argument("--timeout", type=float, default=10.0, help="HTTP timeout in seconds")
    return parser


__all__ = ["main"]
