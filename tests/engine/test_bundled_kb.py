"""The engine over the bundled knowledge base, as the embedded default serves it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from lookup_knowledge.engine import create_engine_app
from lookup_knowledge.engine.corpus import load_documents
from lookup_knowledge.engine.index import KnowledgeIndex
from lookup_knowledge.engine.markdown import DEFAULT_MAX_CHUNK_CHARS, Document


@pytest.fixture(scope="module")
def documents() -> list[Document]:
    return load_documents()


@pytest.fixture(scope="module")
def index(documents: list[Document]) -> KnowledgeIndex:
    return KnowledgeIndex(documents)


@pytest.fixture(scope="module")
def app() -> FastAPI:
    return create_engine_app()


@pytest.fixture
async def client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://engine") as client:
        yield client


async def _search(client: httpx.AsyncClient, query: str) -> dict[str, Any]:
    response = await client.post(
        "/api/v1/search", json={"query": query, "top_k": 20, "mode": "hybrid"}
    )
    assert response.status_code == 200
    body: dict[str, Any] = response.json()
    return body


@pytest.mark.parametrize(
    ("query", "runbook"),
    [
        ("网关超时怎么排查", "gateway-timeout"),
        ("redis memory usage high", "redis-memory"),
    ],
)
async def test_an_exact_topic_query_is_precise_on_its_runbook(
    client: httpx.AsyncClient, query: str, runbook: str
) -> None:
    body = await _search(client, query)

    assert body["evidence_status"] == "supported"
    assert body["relevance_level"] == "PRECISE"
    assert runbook in body["hits"][0]["source"]
    assert body["hits"][0]["quality_score"] >= 0.75


@pytest.mark.parametrize("query", ["qwzx plorf vindle", "how to bake sourdough bread"])
async def test_gibberish_and_unrelated_queries_have_no_evidence(
    client: httpx.AsyncClient, query: str
) -> None:
    body = await _search(client, query)

    assert body["evidence_status"] == "no_evidence"
    assert body["hits"] == []
    assert body["retrieval_trace"]["no_evidence_basis"] in {"no_candidates", "all_below_threshold"}


@pytest.mark.parametrize(
    ("query", "runbook"),
    [
        ("gateway timeout", "gateway-timeout"),  # English query, Chinese runbook
        ("redis 内存过高", "redis-memory"),  # Chinese query, English runbook
        ("证书过期", "tls-cert"),
        ("kafka consumer lag growing", "kafka-consumer-lag"),
        ("磁盘满了怎么办", "disk-full"),
        ("dns resolution failed", "dns"),
    ],
)
def test_chinese_and_english_queries_find_their_runbook_first(
    index: KnowledgeIndex, query: str, runbook: str
) -> None:
    hits = index.search(query, top_k=5).hits

    assert hits, query
    assert runbook in hits[0].chunk.source


def test_every_runbook_is_found_first_by_its_own_title(
    index: KnowledgeIndex, documents: list[Document]
) -> None:
    for document in documents:
        hits = index.search(document.title, top_k=5).hits
        assert hits and hits[0].chunk.source == document.source, document.title
        assert hits[0].quality_score >= 0.75


def test_every_bundled_runbook_has_a_category_and_bounded_chunks(
    documents: list[Document],
) -> None:
    for document in documents:
        assert document.category, document.source
        assert document.chunks, document.source
        assert all(len(c.content) <= DEFAULT_MAX_CHUNK_CHARS for c in document.chunks)


def test_bundled_ids_are_the_same_after_a_re_index(documents: list[Document]) -> None:
    again = load_documents()

    assert [c.evidence_key for d in again for c in d.chunks] == [
        c.evidence_key for d in documents for c in d.chunks
    ]


async def test_health_counts_the_bundled_documents(
    client: httpx.AsyncClient, documents: list[Document]
) -> None:
    body = (await client.get("/api/v1/health")).json()

    assert body == {
        "status": "ok",
        "documents": len(documents),
        "chunks": sum(len(d.chunks) for d in documents),
    }
