"""A healthy py-rag stand-in for the drills: answers every search after a fixed delay.

    python benchmarks/fake_pyrag.py --port 8090 --delay-ms 50 [--hits 8]

It serves `POST /api/v1/search` and `GET /api/v1/health` (docs/pyrag-api.md) with uvicorn and
asyncio, so it answers any number of concurrent calls in `delay-ms`: when the service fails
under load, the fault is the service's, never this stand-in's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

import uvicorn

HITS = [
    ("gw#chunk-1", 0.91),
    ("gw#chunk-3", 0.88),
    ("nginx#chunk-2", 0.8),
    ("k8s#chunk-0", 0.72),
    ("lb#chunk-4", 0.6),
    ("tls#chunk-2", 0.55),
    ("dns#chunk-1", 0.5),
    ("redis#chunk-7", 0.42),
]


def search_body(count: int = 5) -> bytes:
    hits = [
        {
            "evidence_key": key,
            "document_id": key.split("#")[0],
            "source": f"runbooks/{key.split('#')[0]}.md",
            "title": key.split("#")[0].title(),
            "breadcrumb": f"{key.split('#')[0].title()} > Steps",
            "excerpt": f"Excerpt of {key}: check the upstream timeout first. " * 4,
            "quality_score": score,
        }
        for key, score in HITS[:count]
    ]
    return json.dumps(
        {"hits": hits, "evidence_status": "supported", "retrieval_trace": {"mode": "hybrid"}}
    ).encode()


def make_app(delay_s: float, hits: int = 5) -> Any:
    search = search_body(hits)
    health = b'{"status":"ok"}'

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        more = True
        while more:
            message = await receive()
            more = message.get("more_body", False)
        body = health
        if scope["method"] == "POST":
            if delay_s > 0:
                await asyncio.sleep(delay_s)
            body = search
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})

    return app


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--delay-ms", type=float, default=50.0)
    parser.add_argument("--hits", type=int, choices=range(1, len(HITS) + 1), default=5)
    args = parser.parse_args()
    uvicorn.run(
        make_app(args.delay_ms / 1000, args.hits),
        host="127.0.0.1",
        port=args.port,
        log_level="warning",
        access_log=False,
        backlog=4096,
    )
