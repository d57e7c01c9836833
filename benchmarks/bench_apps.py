"""The reference servers the side-by-side bench measures the service against.

    python benchmarks/bench_apps.py passthrough --port 8001 --pyrag-url http://127.0.0.1:8090
    python benchmarks/bench_apps.py hello --port 8002

Both run on the service's own stack: FastAPI, the uvicorn event loop and HTTP implementation
that `lookup-knowledge serve` uses (read from `serving.uvicorn_options`, without its
connection guard), and, for the pass-through, the same pooled py-rag client
(`app.remote_pyrag_client`, same timeouts and pool size). So whatever the service
costs beyond them is its own work: the ledger, the pipeline, the audit, the guard.

* passthrough: `POST /lookup_knowledge` forwards the request body to py-rag's search and
  answers py-rag's bytes;
* hello: `POST /lookup_knowledge` answers a constant JSON object.
"""

from __future__ import annotations

import argparse
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import uvicorn
from fastapi import FastAPI, Request, Response

from lookup_knowledge.adapters.pyrag import SEARCH_PATH
from lookup_knowledge.app import remote_pyrag_client
from lookup_knowledge.serving import uvicorn_options
from lookup_knowledge.settings import Settings


def stack_options(settings: Settings) -> dict[str, Any]:
    """The service's uvicorn loop and HTTP implementation, minus its guard."""
    options = uvicorn_options(settings)
    http = options["http"]
    implementation = "httptools" if "httptools" in str(http).lower() else "h11"
    return {
        "loop": options.get("loop", "auto"),
        "http": implementation,
        "timeout_keep_alive": options["timeout_keep_alive"],
    }


def passthrough_app(settings: Settings) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with remote_pyrag_client(settings) as client:
            app.state.client = client
            yield

    app = FastAPI(lifespan=lifespan)

    @app.post("/lookup_knowledge")
    async def forward(request: Request) -> Response:
        upstream = await request.app.state.client.post(
            SEARCH_PATH,
            content=await request.body(),
            headers={"content-type": "application/json"},
        )
        return Response(content=upstream.content, media_type="application/json")

    return app


def hello_app() -> FastAPI:
    app = FastAPI()

    @app.post("/lookup_knowledge")
    async def hello() -> dict[str, str]:
        return {"message": "Hello World"}

    return app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("app", choices=["passthrough", "hello"])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--pyrag-url")
    args = parser.parse_args()
    settings = Settings(pyrag_base_url=args.pyrag_url)
    app = passthrough_app(settings) if args.app == "passthrough" else hello_app()
    uvicorn.run(
        app,
        host="127.0.0.1",
        port=args.port,
        log_level="warning",
        access_log=False,
        **stack_options(settings),
    )


if __name__ == "__main__":
    main()
