"""Time to ready of `lookup-knowledge serve` on embedded defaults, and where the wall time goes.

    python benchmarks/startup_bench.py              # 7 cold starts, then 7 warm ones
    python benchmarks/startup_bench.py --starts 3 --env PYRAG_DOCS_DIR=/path/to/runbooks
    python benchmarks/startup_bench.py --only cold  # or warm

Each start is a fresh `lookup-knowledge serve` in an empty working directory, with only
PATH, HOME and LANG from this environment. A cold start's data directory is new too (no
SQLite audit file, no spool, no stored index: the first start after an install); the warm
starts share one, filled by a start that is not counted (a restart: the embedded engine
reads the index it stored, docs/retrieval.md#stored-index). The probe asks `GET /readyz`
over a raw socket every 5 ms: a connection refused costs the server nothing, and the probe
itself stays light on a shared machine. CPU counts the server process only, not the index
build a cold start runs beside it on the other core.

Printed per start, and as the median over the starts:

* ready: wall seconds from spawning the process to the first 200 on /readyz;
* CPU: user + system seconds the server had used by then (Linux /proc);
* phases, from the timestamps of the server's own JSON log lines: to the start-up banner
  (interpreter, CLI import, settings), to uvicorn's "Started server process" (the audit
  database check, importing and building the app), to "Application startup complete" (the
  lifespan: the embedded engine's index, the audit writer), and to the first 200.

Target (docs/performance.md#start-up): ready within 2 s.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

TARGET_S = 2.0
PHASES = (
    ("banner", "lookup-knowledge "),
    ("app imported", "Started server process"),
    ("lifespan done", "Application startup complete"),
)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _readyz_status(port: int) -> int | None:
    """The status of one GET /readyz, or None while nothing answers."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as sock:
            sock.sendall(b"GET /readyz HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n")
            head = sock.recv(64)
    except OSError:
        return None
    parts = head.split(b" ", 2)
    return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a running process (Linux /proc)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _phases(log: str, spawned_at: float) -> dict[str, float]:
    """Seconds from spawning to each phase's log line (wall clock of the log timestamps)."""
    found: dict[str, float] = {}
    for line in log.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        at = datetime.fromisoformat(record["ts"]).timestamp() - spawned_at
        for phase, prefix in PHASES:
            if phase not in found and str(record.get("message", "")).startswith(prefix):
                found[phase] = at
    return found


def one_start(extra_env: dict[str, str], data_dir: str | None = None) -> dict[str, float]:
    port = _free_port()
    script = Path(sys.executable).with_name("lookup-knowledge")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "lookup_knowledge"]
    env = {k: v for k, v in os.environ.items() if k in {"PATH", "HOME", "LANG"}}
    env.update(extra_env, PORT=str(port), LOG_FORMAT="json", LOG_LEVEL="INFO")
    if data_dir is not None:
        env["DATA_DIR"] = data_dir
    with tempfile.TemporaryDirectory() as cwd, tempfile.TemporaryFile("w+") as log:
        spawned_at = time.time()
        started = time.perf_counter()
        process = subprocess.Popen(
            [*command, "serve"], cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT
        )
        try:
            while True:
                if _readyz_status(port) == 200:
                    ready = time.perf_counter() - started
                    cpu = _cpu_seconds(process.pid)
                    break
                if process.poll() is not None:
                    log.seek(0)
                    raise RuntimeError(f"serve exited before it was ready:\n{log.read()}")
                if time.perf_counter() - started > 60:
                    raise RuntimeError("serve was not ready within 60 s")
                time.sleep(0.005)
        finally:
            process.terminate()
            process.wait(timeout=30)
        log.seek(0)
        result = _phases(log.read(), spawned_at)
    result.update(ready=ready, cpu=cpu)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--starts", type=int, default=7)
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--only", choices=("cold", "warm"))
    args = parser.parse_args()
    extra_env = dict(item.split("=", 1) for item in args.env)
    for kind in ("cold", "warm"):
        if args.only not in (None, kind):
            continue
        if kind == "cold":
            series(kind, args.starts, lambda: one_start(extra_env))
            continue
        with tempfile.TemporaryDirectory() as shared:
            one_start(extra_env, shared)  # fills it: not counted
            series(kind, args.starts, lambda: one_start(extra_env, shared))


def series(kind: str, starts: int, start: Callable[[], dict[str, float]]) -> None:
    columns = [phase for phase, _ in PHASES] + ["ready", "cpu"]
    print(f"{kind} starts")
    print("start  " + "  ".join(f"{c:>13}" for c in columns))
    runs = []
    for number in range(1, starts + 1):
        run = start()
        runs.append(run)
        cells = [f"{run[c]:>12.2f}s" if c in run else f"{'-':>13}" for c in columns]
        print(f"{number:>5}  " + "  ".join(cells))
    medians = {c: statistics.median(r[c] for r in runs if c in r) for c in columns}
    print("median " + "  ".join(f"{medians[c]:>12.2f}s" for c in columns))
    ready = [r["ready"] for r in runs]
    verdict = "met" if medians["ready"] <= TARGET_S else "not met"
    print(
        f"{kind} ready: median {medians['ready']:.2f} s "
        f"(range {min(ready):.2f}–{max(ready):.2f} s), "
        f"CPU {medians['cpu']:.2f} s; target ≤ {TARGET_S:.1f} s: "
        f"{medians['ready'] / TARGET_S:.2f}x of it, {verdict}"
    )


if __name__ == "__main__":
    main()
