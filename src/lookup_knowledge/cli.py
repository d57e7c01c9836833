"""Console entry `lookup-knowledge`: serve, pyrag serve/explain/index, verify-citation/-report,
audit.

Also `mcp` (lookup_knowledge.mcp_server.stdio) and `tool-spec` (lookup_knowledge.tool_spec).
"""

from __future__ import annotations

import argparse
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from lookup_knowledge import __version__, preflight
from lookup_knowledge.observability.logs import configure_logging
from lookup_knowledge.settings import Settings

log = logging.getLogger("lookup_knowledge")

PYRAG_DEFAULT_PORT = 8090


def _settings_or_exit(*, bind: bool, **overrides: object) -> Settings:
    """Settings that passed every start-up check; else one line per problem and exit 2."""
    try:
        settings = preflight.load_settings(bind=bind, **overrides)
    except preflight.ConfigurationError as exc:
        print(str(exc), file=sys.stderr)
        raise SystemExit(preflight.EXIT_CONFIGURATION) from None
    return settings


def _check_audit_database(settings: Settings) -> None:
    """A wrong audit database stops the start like any bad setting; an unreachable one is an
    outage: reported, not fatal (docs/audit.md#misconfiguration)."""
    from lookup_knowledge.audit.check import check_audit_database

    try:
        outage = check_audit_database(
            settings.audit_database_url.get_secret_value(), timeout_s=settings.audit_db_timeout_s
        )
    except preflight.ConfigurationError as exc:
        print(str(exc), file=sys.stderr)
        raise SystemExit(preflight.EXIT_CONFIGURATION) from None
    if outage is not None:
        log.warning(
            "audit database unreachable at start (%s): serving, not ready until it is reached; "
            "rows wait in %s",
            outage,
            settings.audit_spool_dir,
        )


def _flags_to_environment(args: argparse.Namespace, names: Sequence[str]) -> None:
    """Flags win over the environment by becoming it, so every worker process agrees."""
    for name in names:
        value = getattr(args, name, None)
        if value is not None:
            os.environ[name.upper()] = str(value)


def serve(args: argparse.Namespace) -> int:
    """Run the service with uvicorn on HOST:PORT with WORKERS processes."""
    import tempfile

    import uvicorn

    from lookup_knowledge.serving import uvicorn_options

    _flags_to_environment(args, ("host", "port", "workers"))
    settings = _settings_or_exit(bind=True)
    configure_logging(settings.log_level, settings.log_format)
    log_banner(settings)
    start_index_build(settings)
    _check_audit_database(settings)
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
        **uvicorn_options(settings),
    )
    return 0


def start_index_build(settings: Settings) -> subprocess.Popen[bytes] | None:
    """When the embedded engine has no stored index of its folder as it is now, build one in
    another process (`engine.index_store`'s entry), on the other core, while this one imports
    the service; its lifespan then reads what that build stored (for a small corpus it waits
    for it; a large one it builds too: engine.index_store.obtain). On one core, or with the
    engine remote or its store off, nothing: the lifespan builds as it would."""
    store = settings.index_store_dir
    if settings.pyrag_base_url is not None or store is None or _usable_cores() < 2:
        return None
    from lookup_knowledge.engine import KnowledgeBaseError, index_store

    try:
        # One worker is this process: its lifespan reuses the pages read here.
        keep = settings.workers == 1
        if index_store.is_current(settings.pyrag_docs_dir, store, keep=keep):
            return None
    except (KnowledgeBaseError, OSError):
        return None  # the lifespan's own build reports it
    command = [sys.executable, "-m", "lookup_knowledge.engine.index_store", str(store)]
    if settings.pyrag_docs_dir is not None:
        command.append(str(settings.pyrag_docs_dir))
    environment = {
        **os.environ,
        "LOG_LEVEL": settings.log_level,
        "LOG_FORMAT": settings.log_format,
    }
    # Its log lines join ours on stderr; a thread reaps it when it is done.
    build = subprocess.Popen(command, stdin=subprocess.DEVNULL, env=environment)
    threading.Thread(target=build.wait, name="index-build", daemon=True).start()
    return build


def _usable_cores() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def pyrag_index(args: argparse.Namespace) -> int:
    """Build the embedded engine's index of PYRAG_DOCS_DIR (or --docs) and store it under
    DATA_DIR, unless the stored one is current: the next start reads it (a container image
    can hold it)."""
    from lookup_knowledge.engine import KnowledgeBaseError
    from lookup_knowledge.engine.app import load_index

    if args.docs is not None:
        os.environ["PYRAG_DOCS_DIR"] = str(args.docs)
    settings = _settings_or_exit(bind=False, pyrag_base_url=None)
    configure_logging(settings.log_level, settings.log_format)
    if settings.index_store_dir is None:
        print("PYRAG_INDEX_CACHE is off: no index is stored", file=sys.stderr)
        return preflight.EXIT_CONFIGURATION
    try:
        load_index(settings.pyrag_docs_dir, settings.index_store_dir)
    except KnowledgeBaseError as exc:
        print(str(exc), file=sys.stderr)
        return preflight.EXIT_CONFIGURATION
    return 0


def log_banner(settings: Settings) -> None:
    """One start-up record: where the service listens and which backends it uses."""
    if settings.pyrag_base_url is not None:
        engine = f"py-rag at {settings.pyrag_base_url}"
    else:
        engine = f"embedded engine over {settings.pyrag_docs_dir or 'the bundled knowledge base'}"
    if settings.redis_url is None:
        ledger = "in-process (lost on restart)"
    else:
        kind = "Redis Cluster" if settings.redis_cluster else "Redis"
        ledger = f"{kind} at {preflight.masked_url(settings.redis_url.get_secret_value())}"
    audit_url = settings.audit_database_url.get_secret_value()
    sqlite_file = audit_url.removeprefix("sqlite:///")
    audit = f"SQLite file {sqlite_file}" if sqlite_file != audit_url else audit_url
    audit = preflight.masked_url(audit)
    workers = f"{settings.workers} worker{'s' if settings.workers > 1 else ''}"
    log.info(
        "lookup-knowledge %s on http://%s:%d (%s)\n  engine: %s\n  ledger: %s\n"
        "  audit:  %s (spool %s)\n  data:   %s",
        __version__,
        settings.host,
        settings.port,
        workers,
        engine,
        ledger,
        audit,
        settings.audit_spool_dir,
        settings.data_dir,
    )
    if settings.redis_url is None:
        log.warning(
            "the evidence ledger is in process memory: entries are lost when the service "
            "stops (set REDIS_URL to keep them)"
        )


def pyrag_serve(args: argparse.Namespace) -> int:
    """Run the embedded py-rag compatible engine on its own (HOST, PORT, PYRAG_DOCS_DIR)."""
    from lookup_knowledge.engine.app import run_standalone

    _flags_to_environment(args, ("host", "port"))
    if args.docs is not None:
        os.environ["PYRAG_DOCS_DIR"] = str(args.docs)
    # The engine alone: a PYRAG_BASE_URL meant for the service does not concern it.
    # PORT when it is set, else the engine's own default (the service keeps 8080).
    port = {} if os.environ.get("PORT", "").strip() else {"port": PYRAG_DEFAULT_PORT}
    settings = _settings_or_exit(bind=True, pyrag_base_url=None, **port)
    configure_logging(settings.log_level, settings.log_format)
    run_standalone(settings.pyrag_docs_dir, settings.host, settings.port, settings.index_store_dir)
    return 0


def pyrag_explain(args: argparse.Namespace) -> int:
    """Why the embedded engine answers each query as it does (engine.explain)."""
    from lookup_knowledge.engine.app import load_index
    from lookup_knowledge.engine.explain import explain, render

    docs = args.docs if args.docs is not None else os.environ.get("PYRAG_DOCS_DIR") or None
    folder = Path(docs) if docs else None
    if folder is not None and not folder.is_dir():
        print(f"no folder of documents at {folder}", file=sys.stderr)
        return preflight.EXIT_CONFIGURATION
    index = load_index(folder, _index_store_or_none())
    pairs = (pair.split("=", 1) for pair in args.filter or ())
    filters = {key.strip(): value.strip() for key, value in pairs} or None
    for query in args.query:
        explained = explain(index, query, args.top, filters)
        print(explained.to_json() if args.json else render(explained))
    return 0


def _index_store_or_none() -> Path | None:
    """The stored index's folder `serve` would use (DATA_DIR, PYRAG_INDEX_CACHE), so that
    explaining query after query over a large folder reads its index instead of building it
    each time; None when the settings do not load (explain needs no other setting)."""
    from pydantic import ValidationError

    try:
        return Settings().index_store_dir
    except ValidationError:
        return None


def _docs_argument(parser: argparse.ArgumentParser) -> None:
    """`--docs DIR` of the `pyrag` commands."""
    parser.add_argument(
        "--docs",
        type=Path,
        default=None,
        help="folder of Markdown files (PYRAG_DOCS_DIR, default: the bundled KB)",
    )


def _filter(text: str) -> str:
    if "=" not in text or not text.split("=", 1)[0].strip():
        raise argparse.ArgumentTypeError(f"a filter is key=value, not {text!r}")
    return text


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lookup-knowledge",
        description="Governed, verifiable knowledge-base evidence for LLM agents.",
    )
    commands = parser.add_subparsers(dest="command", required=True)

    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    serve_cmd = commands.add_parser(
        "serve",
        help="serve the HTTP API (settings from the environment and .env; flags win)",
    )
    serve_cmd.add_argument("--host", help="listen address (HOST, default 127.0.0.1)")
    serve_cmd.add_argument("--port", type=int, help="listen port (PORT, default 8080)")
    serve_cmd.add_argument("--workers", type=int, help="worker processes (WORKERS, default 1)")
    serve_cmd.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    serve_cmd.set_defaults(handler=serve)

    pyrag = commands.add_parser("pyrag", help="the embedded py-rag compatible engine")
    pyrag_commands = pyrag.add_subparsers(dest="pyrag_command", required=True)
    pyrag_serve_cmd = pyrag_commands.add_parser("serve", help="serve the engine over HTTP")
    _docs_argument(pyrag_serve_cmd)
    pyrag_serve_cmd.add_argument("--host", help="listen address (HOST, default 127.0.0.1)")
    pyrag_serve_cmd.add_argument(
        "--port", type=int, help=f"listen port (PORT, default {PYRAG_DEFAULT_PORT})"
    )
    pyrag_serve_cmd.set_defaults(handler=pyrag_serve)
    pyrag_index_cmd = pyrag_commands.add_parser(
        "index", help="build the engine's index and store it under DATA_DIR for the next start"
    )
    _docs_argument(pyrag_index_cmd)
    pyrag_index_cmd.set_defaults(handler=pyrag_index)
    pyrag_explain_cmd = pyrag_commands.add_parser(
        "explain", help="why the engine answers a query as it does: its reading, its documents"
    )
    pyrag_explain_cmd.add_argument("query", nargs="+", help="one or more queries")
    _docs_argument(pyrag_explain_cmd)
    pyrag_explain_cmd.add_argument("--top", type=int, default=5, help="documents shown per query")
    pyrag_explain_cmd.add_argument(
        "--filter", action="append", type=_filter, help="key=value, as a search's filters"
    )
    pyrag_explain_cmd.add_argument("--json", action="store_true", help="one JSON line per query")
    pyrag_explain_cmd.set_defaults(handler=pyrag_explain)

    verify = commands.add_parser(
        "verify-citation", help="check a citation against its ledger entry", add_help=False
    )
    verify.set_defaults(delegate="lookup_knowledge.guard.citation_cli")

    verify_report = commands.add_parser(
        "verify-report", help="check a whole report against the ledger", add_help=False
    )
    verify_report.set_defaults(delegate="lookup_knowledge.guard.report_cli")

    evaluate = commands.add_parser(
        "eval", help="retrieval and pipeline evaluation over the golden cases", add_help=False
    )
    evaluate.set_defaults(delegate="lookup_knowledge.evaluation.cli")

    mcp = commands.add_parser(
        "mcp", help="serve the tool to an MCP host over stdio", add_help=False
    )
    mcp.set_defaults(delegate="lookup_knowledge.mcp_server.stdio")

    tool_spec = commands.add_parser(
        "tool-spec",
        help="print the tool definition (openai, anthropic, mcp, json-schema) or report-schema",
        add_help=False,
    )
    tool_spec.set_defaults(delegate="lookup_knowledge.tool_spec")

    audit = commands.add_parser(
        "audit", help="read the audit trail: show RUN_ID, quarantine, requeue", add_help=False
    )
    audit.set_defaults(delegate="lookup_knowledge.audit.cli")
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
