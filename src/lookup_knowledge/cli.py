"""Console entry `lookup-knowledge`: serve, pyrag serve, verify-citation, audit show."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from pydantic import ValidationError

from lookup_knowledge.settings import Settings


def _load_settings() -> Settings:
    try:
        return Settings()
    except ValidationError as exc:
        lines = [
            f"  {'.'.join(map(str, e['loc'])).upper() or 'settings'}: {e['msg']}"
            for e in exc.errors()
        ]
        print("invalid configuration:\n" + "\n".join(lines), file=sys.stderr)
        raise SystemExit(2) from None


def serve(_: argparse.Namespace) -> int:
    """Run the service with uvicorn on HOST:PORT with WORKERS processes."""
    import os
    import tempfile

    import uvicorn

    settings = _load_settings()
    if settings.workers > 1 and not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        # Several processes: metrics are aggregated through prometheus-client's files.
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="lk-metrics-")
    uvicorn.run(
        "lookup_knowledge.app:create_served_app",
        factory=True,
        host=settings.host,
        port=settings.port,
        workers=settings.workers,
        log_level=settings.log_level.lower(),
        log_config=None,
        timeout_graceful_shutdown=30,
    )
    return 0


def pyrag_serve(args: argparse.Namespace) -> int:
    """Run the embedded py-rag compatible engine on its own."""
    from lookup_knowledge.engine.app import run_standalone

    run_standalone(args.docs, args.host, args.port)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lookup-knowledge",
        description="Governed, verifiable knowledge-base evidence for LLM agents.",
    )
    commands = parser.add_subparsers(dest="command", required=True)

    serve_cmd = commands.add_parser("serve", help="serve the HTTP API (settings from env/.env)")
    serve_cmd.set_defaults(handler=serve)

    pyrag = commands.add_parser("pyrag", help="the embedded py-rag compatible engine")
    pyrag_commands = pyrag.add_subparsers(dest="pyrag_command", required=True)
    pyrag_serve_cmd = pyrag_commands.add_parser("serve", help="serve the engine over HTTP")
    pyrag_serve_cmd.add_argument(
        "--docs", type=Path, default=None, help="folder of Markdown files (default: the bundled KB)"
    )
    pyrag_serve_cmd.add_argument("--host", default="127.0.0.1")
    pyrag_serve_cmd.add_argument("--port", type=int, default=8090)
    pyrag_serve_cmd.set_defaults(handler=pyrag_serve)

    verify = commands.add_parser(
        "verify-citation", help="check a citation against its ledger entry", add_help=False
    )
    verify.set_defaults(delegate="lookup_knowledge.guard")

    evaluate = commands.add_parser(
        "eval", help="retrieval and pipeline evaluation over the golden cases", add_help=False
    )
    evaluate.set_defaults(delegate="lookup_knowledge.evaluation.cli")

    audit = commands.add_parser("audit", help="read the tool_invocation audit table")
    audit_commands = audit.add_subparsers(dest="audit_command", required=True)
    show = audit_commands.add_parser("show", help="a run's calls", add_help=False)
    show.set_defaults(delegate="lookup_knowledge.audit_show")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args, rest = parser.parse_known_args(args_list)
    delegate = getattr(args, "delegate", None)
    if delegate is not None:
        import importlib

        module = importlib.import_module(delegate)
        result: int = module.main(rest)
        return result
    if rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    handler = args.handler
    code: int = handler(args)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
