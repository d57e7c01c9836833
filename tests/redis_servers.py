"""Throwaway redis-servers on free local ports: one node, or a three-node Redis Cluster.

The tests never touch the machine's own Redis: each test session starts its own servers and
shuts them down afterwards, so two suites running at once cannot disturb each other.
"""

from __future__ import annotations

import random
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def redis_server(directory: Path) -> Iterator[str]:
    """Start one private redis-server, yield its URL, shut it down afterwards."""
    server, cli = _binaries()
    port = _free_ports(1, bus=False)[0]
    try:
        _start_node(server, port, directory / str(port))
        _wait(lambda: _ping(cli, port))
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        _shutdown(cli, [port])


@contextmanager
def redis_cluster(directory: Path, nodes: int = 3) -> Iterator[str]:
    """Start `nodes` cluster-enabled redis-servers, join them, yield a node's URL."""
    server, cli = _binaries()
    ports = _free_ports(nodes, bus=True)
    try:
        for port in ports:
            _start_node(
                server,
                port,
                directory / str(port),
                *("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"),
            )
        for port in ports:
            _wait(lambda p=port: _ping(cli, p))
        subprocess.run(
            [
                cli,
                "--cluster",
                "create",
                *(f"127.0.0.1:{p}" for p in ports),
                "--cluster-replicas",
                "0",
                "--cluster-yes",
            ],
            check=True,
            timeout=60,
            capture_output=True,
        )
        _wait(lambda: all(_cluster_ok(cli, p) for p in ports))
        yield f"redis://127.0.0.1:{ports[0]}/0"
    finally:
        _shutdown(cli, ports)


def _binaries() -> tuple[str, str]:
    server = shutil.which("redis-server")
    cli = shutil.which("redis-cli")
    if server is None or cli is None:
        raise RuntimeError("redis-server and redis-cli are needed for the Redis tests")
    return server, cli


def _start_node(server: str, port: int, node_dir: Path, *extra: str) -> None:
    node_dir.mkdir(parents=True)
    subprocess.run(
        [
            server,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            *extra,
            "--save",
            "",
            "--appendonly",
            "no",
            "--daemonize",
            "yes",
            "--dir",
            str(node_dir),
            "--logfile",
            "redis.log",
        ],
        check=True,
        timeout=30,
    )


def _shutdown(cli: str, ports: list[int]) -> None:
    for port in ports:
        subprocess.run(
            [cli, "-p", str(port), "shutdown", "nosave"],
            capture_output=True,
            timeout=30,
            check=False,
        )


def _free_ports(count: int, *, bus: bool) -> list[int]:
    """Free ports; with `bus`, each one's cluster bus port p + 10000 is free too."""
    ports: list[int] = []
    while len(ports) < count:
        port = random.randint(20000, 45000)
        if port not in ports and _free(port) and (not bus or _free(port + 10000)):
            ports.append(port)
    return ports


def _free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def _ping(cli: str, port: int) -> bool:
    done = subprocess.run(
        [cli, "-p", str(port), "ping"], capture_output=True, text=True, timeout=10, check=False
    )
    return done.stdout.strip() == "PONG"


def _cluster_ok(cli: str, port: int) -> bool:
    done = subprocess.run(
        [cli, "-p", str(port), "cluster", "info"],
        capture_output=True,
        text=True,
        timeout=10,
        check=False,
    )
    return "cluster_state:ok" in done.stdout


def _wait(ready: object, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not ready():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise RuntimeError("the Redis Cluster did not come up")
        time.sleep(0.1)
