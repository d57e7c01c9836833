"""The served process's log lines once `configure_logging` has run (observability/logs.py):
the same fields, with the logging module no longer looking up callers, threads or processes."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import logging
    from lookup_knowledge.observability.logs import configure_logging, request_id_var

    configure_logging("INFO", "json")
    request_id_var.set("req-1")
    log = logging.getLogger("lookup_knowledge.lookup")
    log.info("lookup %s", "ok", extra={"run_id": "run-1", "stages_ms": {"pyrag": 1.5}})
    try:
        raise ValueError("boom")
    except ValueError:
        log.exception("failed")
    log.debug("not at INFO")
    print(logging._srcfile is None, logging.logThreads, logging.logProcesses)
    """
)


def test_json_lines_keep_their_fields_and_tracebacks_without_caller_lookups() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True, timeout=60
    )
    first, second = (json.loads(line) for line in done.stderr.splitlines())

    assert set(first) == {"ts", "level", "logger", "message", "request_id", "run_id", "stages_ms"}
    assert first["message"] == "lookup ok" and first["level"] == "INFO"
    assert first["run_id"] == "run-1" and first["stages_ms"] == {"pyrag": 1.5}
    assert first["request_id"] == "req-1" and first["ts"].endswith("+00:00")
    assert second["message"] == "failed" and "ValueError: boom" in second["exc_info"]
    assert done.stdout.split() == ["True", "False", "False"]
