"""Helpers for the audit tests (no tests here): databases, records, a TCP proxy to cut MariaDB.

MariaDB tests use the real server on 127.0.0.1:3306 (user root, no password; override with
LK_TEST_MYSQL_URL) in throwaway databases named `lk_test_audit_<random>`, created and dropped
around each test. SQLite tests use a file under the test's tmp_path.
"""

from __future__ import annotations

import contextlib
import os
import select
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, create_engine, make_url, text
from sqlalchemy.engine import URL

from lookup_knowledge.audit import schema
from lookup_knowledge.audit import sql as audit_sql
from lookup_knowledge.audit.spool import Spool
from lookup_knowledge.domain.audit import AuditRecord

MYSQL_SERVER_URL = os.environ.get("LK_TEST_MYSQL_URL", "mysql+pymysql://root@127.0.0.1:3306")
# Nothing listens on port 1: connecting is refused at once, like a database that is down.
UNREACHABLE_MYSQL_URL = "mysql+pymysql://root@127.0.0.1:1/lk_test_audit_unreachable"

BACKENDS = ["sqlite", pytest.param("mariadb", marks=pytest.mark.mysql)]


def server_url() -> URL:
    return make_url(MYSQL_SERVER_URL)


@contextlib.contextmanager
def mariadb_database() -> Iterator[URL]:
    """A fresh, empty MariaDB database for one test, dropped afterwards."""
    name = f"lk_test_audit_{uuid.uuid4().hex[:12]}"
    admin = create_engine(server_url(), isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4"))
        yield server_url().set(database=name)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f"DROP DATABASE IF EXISTS `{name}`"))
        admin.dispose()


@contextlib.contextmanager
def database(backend: str, tmp_path: Path) -> Iterator[str]:
    """The URL of an empty audit database of the given backend."""
    if backend == "sqlite":
        yield f"sqlite:///{tmp_path / 'db' / 'audit.db'}"
    else:
        with mariadb_database() as url:
            yield url.render_as_string(hide_password=False)


@contextlib.contextmanager
def reader(url: str | URL) -> Iterator[Engine]:
    """An engine the test reads with (never through a proxy the test cuts)."""
    engine = audit_sql.create_audit_engine(url)
    try:
        yield engine
    finally:
        engine.dispose()


def all_rows(engine: Engine) -> list[dict[str, Any]]:
    with engine.connect() as conn:
        result = conn.execute(schema.tool_invocation.select().order_by(schema.tool_invocation.c.id))
        return [dict(row._mapping) for row in result]


def stored_ids(engine: Engine) -> list[str]:
    """Invocation ids in insert order."""
    return [row["invocation_id"] for row in all_rows(engine)]


_BASE_TIME = datetime(2026, 11, 30, 10, 0, 0, 123000, tzinfo=UTC)


def make_record(n: int = 0, **overrides: Any) -> AuditRecord:
    """A successful lookup's row; `n` makes ids and times distinct and ordered."""
    values: dict[str, Any] = {
        "run_id": "run-42",
        "tool_call_id": f"call_{n}",
        "query": "网关超时怎么排查",
        "success": True,
        "step_id": "step-1",
        "evidence_status": "EVIDENCE_FOUND",
        "relevance_level": "PRECISE",
        "top_quality_score": 0.9147,
        "candidate_count": 8,
        "evidence_block_count": 5,
        "returned_count": 5,
        "truncated": False,
        "retrieval_details": {
            "retrieval_trace": {"mode": "hybrid", "recall_count": 20},
            "evidence_status": "supported",
            "evidence_refs": [
                {
                    "raw_path": "$.evidence[0]",
                    "document_id": "gw#chunk-1",
                    "text": "Check the upstream timeout first",
                }
            ],
        },
        "output_preview": '{"evidence_status":"EVIDENCE_FOUND"}',
        "duration_ms": 42,
        "upstream_ms": 30,
        "created_at": _BASE_TIME + timedelta(milliseconds=n),
    }
    values.update(overrides)
    return AuditRecord(**values)


def spool_depth(spool_dir: Path) -> int:
    """Rows a process starting now would find waiting in the spool directory."""
    spool = Spool(spool_dir)
    try:
        return spool.depth()
    finally:
        spool.close()


def wait_until(condition: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        time.sleep(0.01)


class TcpProxy:
    """A TCP forwarder the test can cut (refusing and resetting connections) and restore."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self._target = (target_host, target_port)
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        self.port: int = probe.getsockname()[1]
        probe.close()
        self._listener: socket.socket | None = None
        self._running = threading.Event()
        self._forwarding = threading.Event()
        self._forwarding.set()
        self._threads: list[threading.Thread] = []
        self._connections: set[socket.socket] = set()
        self._lock = threading.Lock()

    def start(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        listener.settimeout(0.05)
        self._listener = listener
        self._running.set()
        self._spawn(self._accept_loop, listener)

    def stop(self) -> None:
        """Cut: stop listening (new connections are refused) and reset every open one."""
        self._running.clear()
        for thread in self._threads:
            thread.join(5)
        self._threads = []
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        with self._lock:
            for conn in self._connections:
                with contextlib.suppress(OSError):
                    conn.close()
            self._connections.clear()

    def freeze(self) -> None:
        """Blackhole: connections are accepted and kept open, but nothing is forwarded."""
        self._forwarding.clear()

    def thaw(self) -> None:
        self._forwarding.set()

    def _spawn(self, target: Callable[..., None], *args: Any) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)
        self._threads.append(thread)
        thread.start()

    def _accept_loop(self, listener: socket.socket) -> None:
        while self._running.is_set():
            try:
                client, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            try:
                upstream = socket.create_connection(self._target, timeout=5)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._connections.update((client, upstream))
            self._spawn(self._pump, client, upstream)

    def _pump(self, a: socket.socket, b: socket.socket) -> None:
        peers = {a: b, b: a}
        try:
            while self._running.is_set():
                if not self._forwarding.is_set():
                    time.sleep(0.02)
                    continue
                readable, _, _ = select.select([a, b], [], [], 0.05)
                for sock in readable:
                    data = sock.recv(65536)
                    if not data:
                        return
                    peers[sock].sendall(data)
        except OSError:
            return
        finally:
            for sock in (a, b):
                with contextlib.suppress(OSError):
                    sock.close()


def refuse_poison(db: Engine) -> None:
    """A trigger that refuses any row whose query is 'poison'."""
    schema.ensure_schema(db)
    with db.begin() as conn:
        if db.dialect.name == "sqlite":
            conn.execute(
                text(
                    "CREATE TRIGGER refuse_poison BEFORE INSERT ON tool_invocation "
                    "WHEN NEW.query = 'poison' BEGIN SELECT RAISE(ABORT, 'poison row'); END"
                )
            )
        else:
            conn.execute(
                text(
                    "CREATE TRIGGER refuse_poison BEFORE INSERT ON tool_invocation FOR EACH ROW "
                    "IF NEW.query = 'poison' THEN "
                    "SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'poison row'; END IF"
                )
            )
