"""The py-rag API v1 (docs/pyrag-api.md) as the service's adapter sees it, over ASGITransport."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from lookup_knowledge.engine import KnowledgeBaseError, create_engine_app

HIT_KEYS = {
    "evidence_key",
    "document_id",
    "source",
    "title",
    "breadcrumb",
    "excerpt",
    "quality_score",
    "relevance_level",
}


@pytest.fixture
async def client(small_kb: Path) -> AsyncIterator[httpx.AsyncClient]:
    app = create_engine_app(small_kb)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://engine"
    ) as client:
        yield client


async def _search(client: httpx.AsyncClient, **body: Any) -> dict[str, Any]:
    response = await client.post("/api/v1/search", json={"top_k": 20, "mode": "hybrid", **body})
    assert response.status_code == 200, response.text
    payload: dict[str, Any] = response.json()
    return payload


async def test_a_supported_answer_has_the_spec_shape(client: httpx.AsyncClient) -> None:
    body = await _search(client, query="redis memory usage high", filters={"category": "redis"})

    assert set(body) == {
        "query",
        "mode",
        "hits",
        "relevance_level",
        "evidence_status",
        "retrieval_trace",
    }
    assert body["query"] == "redis memory usage high"
    assert body["mode"] == "hybrid"
    assert body["evidence_status"] == "supported"
    assert body["relevance_level"] == "PRECISE"
    hit = body["hits"][0]
    assert set(hit) == HIT_KEYS
    assert hit["source"] == "redis/redis-memory.md"
    assert hit["title"] == "Redis memory usage high"
    assert hit["breadcrumb"].startswith("Redis memory usage high")
    assert hit["evidence_key"].startswith(hit["document_id"] + "#chunk-")
    assert hit["excerpt"].strip()
    assert 0.75 <= hit["quality_score"] <= 1.0
    assert hit["relevance_level"] == "PRECISE"
    assert body["retrieval_trace"] == {
        "mode": "hybrid",
        "filters": {"category": "redis"},
        "recall_count": body["retrieval_trace"]["recall_count"],
        "rerank_model": "calibrated-coverage-v6",
        "no_evidence_basis": None,
    }
    assert body["retrieval_trace"]["recall_count"] >= len(body["hits"])


async def test_every_hit_level_matches_its_score(client: httpx.AsyncClient) -> None:
    body = await _search(client, query="kafka consumer lag redis memory")

    for hit in body["hits"]:
        score = hit["quality_score"]
        expected = "PRECISE" if score >= 0.75 else "REFERENCE" if score >= 0.5 else None
        assert hit["relevance_level"] == expected
    assert body["relevance_level"] == body["hits"][0]["relevance_level"]


async def test_no_evidence_is_a_normal_answer_with_its_basis(client: httpx.AsyncClient) -> None:
    body = await _search(client, query="qwzx plorf vindle")

    assert body["hits"] == []
    assert body["evidence_status"] == "no_evidence"
    assert body["relevance_level"] is None
    assert body["retrieval_trace"]["no_evidence_basis"] == "no_candidates"
    assert body["retrieval_trace"]["recall_count"] == 0
    assert body["retrieval_trace"]["filters"] is None


async def test_all_below_threshold_is_reported(client: httpx.AsyncClient) -> None:
    body = await _search(client, query="a memory foam mattress for the ops team")

    assert body["evidence_status"] == "no_evidence"
    assert body["retrieval_trace"]["no_evidence_basis"] == "all_below_threshold"


async def test_top_k_and_mode_are_optional(client: httpx.AsyncClient) -> None:
    response = await client.post("/api/v1/search", json={"query": "kafka lag"})

    assert response.status_code == 200
    assert response.json()["mode"] == "hybrid"


async def test_unknown_request_fields_are_ignored(client: httpx.AsyncClient) -> None:
    body = await _search(client, query="kafka lag", rerank=True)

    assert body["evidence_status"] == "supported"


@pytest.mark.parametrize(
    "body",
    [
        {"top_k": 5},
        {"query": "   "},
        {"query": "x" * 4001},
        {"query": "kafka", "top_k": 0},
        {"query": "kafka", "top_k": "many"},
        {"query": "kafka", "filters": ["category"]},
        {"query": "kafka", "filters": {"category": 3}},
        {"query": 42},
    ],
)
async def test_bad_request_bodies_are_422_json(
    client: httpx.AsyncClient, body: dict[str, Any]
) -> None:
    response = await client.post("/api/v1/search", json=body)

    assert response.status_code == 422
    assert response.headers["content-type"].startswith("application/json")


async def test_a_body_that_is_not_json_is_422(client: httpx.AsyncClient) -> None:
    response = await client.post(
        "/api/v1/search", content=b"{not json", headers={"content-type": "application/json"}
    )

    assert response.status_code == 422


async def test_health_reports_the_size_of_the_index(client: httpx.AsyncClient) -> None:
    response = await client.get("/api/v1/health")

    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    assert body["documents"] == 3
    assert body["chunks"] >= 5


def test_a_missing_docs_dir_fails_at_build_time(tmp_path: Path) -> None:
    with pytest.raises(KnowledgeBaseError, match="does not exist"):
        create_engine_app(tmp_path / "nope")


async def test_the_app_reads_the_lexicon_files_of_its_docs_folder(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    (docs / ".lexicon").mkdir(parents=True)
    (docs / "frob.md").write_text(
        "# Frobnicator stalls\n\nThe frobnicator stalls when its queue is full.\n", "utf-8"
    )
    (docs / "other.md").write_text("# Widget colours\n\nWidgets come in colours.\n", "utf-8")
    (docs / ".lexicon" / "glossary.txt").write_text("磨盘 frobnicator\n", "utf-8")
    (docs / ".lexicon" / "thesaurus.txt").write_text("widget grinder = frobnicator\n", "utf-8")
    app = create_engine_app(docs)

    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://engine"
    ) as client:
        glossary = await _search(client, query="磨盘 stalls")
        thesaurus = await _search(client, query="the widget grinder stalls")

    assert glossary["hits"][0]["source"] == "frob.md"
    assert thesaurus["hits"][0]["source"] == "frob.md"
