"""Run the service (or the engine) as a real process, as the e2e tests do."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def console_script() -> list[str]:
    """The installed `lookup-knowledge` script next to this interpreter, else `python -m`."""
    script = Path(sys.executable).with_name("lookup-knowledge")
    if script.exists():
        return [str(script)]
    found = shutil.which("lookup-knowledge")
    return [found] if found else [sys.executable, "-m", "lookup_knowledge"]


class Running(str):
    """The base URL of a started service; `.process` is its Popen."""

    process: subprocess.Popen[bytes]


@contextmanager
def running_service(
    args: list[str],
    *,
    cwd: Path,
    env: dict[str, str],
    port: int,
    ready_path: str = "/healthz",
    timeout_s: float = 30.0,
) -> Iterator[Running]:
    """Start `lookup-knowledge ARGS` with a clean environment; yield its base URL when ready."""
    clean = {k: v for k, v in os.environ.items() if k in {"PATH", "HOME", "LANG", "SYSTEMROOT"}}
    clean.update(env)
    log_path = cwd / f"service-{port}.log"
    log = log_path.open("wb")
    process = subprocess.Popen(
        console_script() + args, cwd=cwd, env=clean, stdout=log, stderr=subprocess.STDOUT
    )
    base = Running(f"http://127.0.0.1:{port}")
    base.process = process
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            if process.poll() is not None:
                raise AssertionError(
                    f"service exited with {process.returncode}: "
                    + log_path.read_text(errors="replace")
                )
            try:
                if httpx.get(base + ready_path, timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError(
                    "service did not become ready: " + log_path.read_text(errors="replace")
                )
            time.sleep(0.1)
        yield base
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()
