"""A tiny py-rag stand-in on a real port, for tests that start the service as a process."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from builders import WORKED_EXAMPLE, pyrag_body, raw_hit


class _Handler(BaseHTTPRequestHandler):
    server: StubPyrag

    def do_GET(self) -> None:
        self._send({"status": "ok"})

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length", 0))
        request = json.loads(self.rfile.read(length))
        with self.server.lock:
            self.server.requests.append(request)
        time.sleep(self.server.delay_s)
        self._send(pyrag_body([raw_hit(k, s) for k, s in WORKED_EXAMPLE]))

    def _send(self, data: Any) -> None:
        body = json.dumps(data).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


class StubPyrag(ThreadingHTTPServer):
    """Answers every search with the worked example of docs/pipeline.md, after `delay_s`."""

    def __init__(self, delay_s: float = 0.0) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.delay_s = delay_s
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    @property
    def calls(self) -> int:
        return len(self.requests)

    @classmethod
    def start(cls, delay_s: float = 0.0) -> StubPyrag:
        server = cls(delay_s)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return server
