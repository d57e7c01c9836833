"""The engine's answers go through the service's own py-rag adapter without losses."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from fastapi import FastAPI

from lookup_knowledge.adapters.pyrag import PyragClient
from lookup_knowledge.engine import create_engine_app


@pytest.fixture(scope="module")
def engine() -> FastAPI:
    return create_engine_app()


@pytest.fixture
async def pyrag(engine: FastAPI) -> AsyncIterator[PyragClient]:
    transport = httpx.ASGITransport(app=engine)
    async with httpx.AsyncClient(transport=transport, base_url="http://pyrag") as client:
        yield PyragClient(client, top_k=20, mode="hybrid")


@pytest.mark.parametrize(
    "query", ["网关超时怎么排查", "redis memory usage high", "kafka 消费积压", "证书过期"]
)
async def test_every_hit_is_accepted_by_the_adapter(pyrag: PyragClient, query: str) -> None:
    outcome = await pyrag.search(query, filters=None)

    assert outcome.upstream_status == "supported"
    assert outcome.dropped_invalid == 0
    assert outcome.hit_count == len(outcome.hits) > 0
    assert [h.original_rank for h in outcome.hits] == list(range(1, len(outcome.hits) + 1))
    for hit in outcome.hits:
        assert hit.chunk_index is not None
        assert hit.evidence_key == f"{hit.doc_id}#chunk-{hit.chunk_index}"
        assert 0.2 <= hit.score <= 1.0
        assert hit.source and hit.title and hit.breadcrumb and hit.content
    assert outcome.hits[0].score >= 0.75
    assert outcome.retrieval_trace is not None
    assert outcome.retrieval_trace["rerank_model"] == "calibrated-coverage-v6"


async def test_no_evidence_reaches_the_adapter_as_an_empty_answer(pyrag: PyragClient) -> None:
    outcome = await pyrag.search("qwzx plorf vindle", filters=None)

    assert outcome.upstream_status == "no_evidence"
    assert outcome.hits == ()
    assert outcome.dropped_invalid == 0


async def test_the_adapter_passes_the_category_filter_through(pyrag: PyragClient) -> None:
    outcome = await pyrag.search("超时", filters={"category": "gateway"})

    assert outcome.hits
    assert {hit.source.split("/")[0] for hit in outcome.hits if hit.source} == {"gateway"}
    assert outcome.retrieval_trace is not None
    assert outcome.retrieval_trace["filters"] == {"category": "gateway"}
