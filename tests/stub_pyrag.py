"""A tiny py-rag stand-in on a real port, for tests that start the service as a process."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from builders import WORKED_EXAMPLE, pyrag_body, raw_hit


class _Handler(BaseHTTPRequestHandler):
    server: StubPyrag

    def do_GET(self) -> None:
        self._send({"status": "ok"})

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length", 0))
        try:
            request = json.loads(self.rfile.read(length))
        except ValueError:  # the caller died mid-request (a killed service)
            self._send_bytes(400, b"{}")
            return
        with self.server.lock:
            self.server.requests.append(request)
        time.sleep(self.server.delay_s)
        if self.server.responder is not None:
            self._send_bytes(*self.server.responder(request))
            return
        self._send(pyrag_body([raw_hit(k, s) for k, s in WORKED_EXAMPLE]))

    def _send(self, data: Any) -> None:
        self._send_bytes(200, json.dumps(data).encode())

    def _send_bytes(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self.wfile.write(body)  # a client may stop reading (a body over its cap)

    def log_message(self, *args: object) -> None:
        pass


# Given the search request, the HTTP status and body bytes to answer with.
Responder = Callable[[dict[str, Any]], tuple[int, bytes]]


class StubPyrag(ThreadingHTTPServer):
    """Answers every search with the worked example of docs/pipeline.md after `delay_s`, or with
    what `responder` makes of the request."""

    daemon_threads = True

    def __init__(self, delay_s: float = 0.0, responder: Responder | None = None) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.delay_s = delay_s
        self.responder = responder
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    @property
    def calls(self) -> int:
        return len(self.requests)

    @classmethod
    def start(cls, delay_s: float = 0.0, responder: Responder | None = None) -> StubPyrag:
        server = cls(delay_s, responder)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return server
