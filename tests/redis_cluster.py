"""A throwaway three-node Redis Cluster on free local ports, for the ledger's cluster tests."""

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
def redis_cluster(directory: Path, nodes: int = 3) -> Iterator[str]:
    """Start `nodes` cluster-enabled redis-servers, join them, yield a node's URL."""
    server = shutil.which("redis-server")
    cli = shutil.which("redis-cli")
    if server is None or cli is None:
        raise RuntimeError("redis-server and redis-cli are needed for the Redis Cluster tests")
    ports = _cluster_ports(nodes)
    try:
        for port in ports:
            node_dir = directory / str(port)
            node_dir.mkdir(parents=True)
            subprocess.run(
                [
                    server,
                    "--port",
                    str(port),
                    "--bind",
                    "127.0.0.1",
                    "--cluster-enabled",
                    "yes",
                    "--cluster-config-file",
                    "nodes.conf",
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
        for port in ports:
            subprocess.run(
                [cli, "-p", str(port), "shutdown", "nosave"],
                capture_output=True,
                timeout=30,
                check=False,
            )


def _cluster_ports(count: int) -> list[int]:
    """Ports p with p and its cluster bus port p + 10000 both free (p must stay <= 55535)."""
    ports: list[int] = []
    while len(ports) < count:
        port = random.randint(20000, 45000)
        if port not in ports and _free(port) and _free(port + 10000):
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
