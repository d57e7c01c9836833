"""The category list behind the MCP categories resource (docs/pyrag-api.md#categories)."""

from __future__ import annotations

import httpx
import pytest
import respx

from lookup_knowledge.adapters.pyrag import PyragClient
from lookup_knowledge.domain.errors import UpstreamError
from lookup_knowledge.engine.app import create_engine_app
from support import PYRAG_TEST_URL

CATEGORIES_URL = f"{PYRAG_TEST_URL}/api/v1/categories"


async def test_the_embedded_engine_lists_categories_that_each_filter_to_documents() -> None:
    engine = create_engine_app()
    transport = httpx.ASGITransport(app=engine)
    async with httpx.AsyncClient(transport=transport, base_url="http://engine") as http:
        names = await PyragClient(http, top_k=5, mode="hybrid").categories()
        assert names is not None and "gateway" in names
        assert names == sorted(names, key=str.casefold) and len(set(names)) == len(names)
        answered = set()
        for name in names:
            body = {"query": "现象", "top_k": 200, "filters": {"category": name}}
            hits = (await http.post("/api/v1/search", json=body)).json()["hits"]
            assert all(hit["source"].startswith(f"{name}/") for hit in hits), name
            answered |= {name} if hits else set()
        assert len(answered) >= 3  # the filter really selects, it is not vacuously empty


@pytest.mark.parametrize("status", [404, 405])
async def test_a_py_rag_without_the_route_lists_no_categories(status: int) -> None:
    async with httpx.AsyncClient(base_url=PYRAG_TEST_URL) as http:
        with respx.mock() as mock:
            mock.get(CATEGORIES_URL).respond(status)
            names = await PyragClient(http, top_k=5, mode="hybrid").categories()
    assert names is None


@pytest.mark.parametrize(
    "answer",
    [httpx.Response(500), httpx.Response(200, text="<html>"), httpx.Response(200, json={"x": 1})],
)
async def test_a_broken_category_answer_is_an_upstream_error(answer: httpx.Response) -> None:
    async with httpx.AsyncClient(base_url=PYRAG_TEST_URL) as http:
        with respx.mock() as mock:
            mock.get(CATEGORIES_URL).mock(return_value=answer)
            with pytest.raises(UpstreamError):
                await PyragClient(http, top_k=5, mode="hybrid").categories()
