"""HTTP face of the engine: py-rag API v1 (docs/pyrag-api.md) over a `KnowledgeIndex`.

`create_engine_app` builds the index inside the factory, not in a lifespan, because the
service mounts the app through `httpx.ASGITransport`, which never runs lifespans.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Annotated, Literal

from fastapi import APIRouter, FastAPI
from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from lookup_knowledge.engine import index_store, scoring
from lookup_knowledge.engine.index import KnowledgeIndex, NoEvidenceBasis, SearchResult

logger = logging.getLogger(__name__)

MAX_QUERY_CHARS = 4000
MAX_TOP_K = 200


class SearchRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")

    query: Annotated[
        str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_QUERY_CHARS)
    ]
    top_k: int = Field(20, ge=1, le=MAX_TOP_K)
    # One lexical retrieval path serves every mode; the mode is echoed for the trace.
    mode: Annotated[str, StringConstraints(min_length=1, max_length=32)] = "hybrid"
    filters: dict[str, str] | None = None


class SearchHit(BaseModel):
    evidence_key: str
    document_id: str
    source: str
    title: str
    breadcrumb: str
    excerpt: str
    quality_score: float
    relevance_level: scoring.Level | None


class RetrievalTrace(BaseModel):
    mode: str
    filters: dict[str, str] | None
    recall_count: int
    rerank_model: str
    no_evidence_basis: NoEvidenceBasis | None


class SearchResponse(BaseModel):
    query: str
    mode: str
    hits: list[SearchHit]
    relevance_level: scoring.Level | None
    evidence_status: Literal["supported", "no_evidence"]
    retrieval_trace: RetrievalTrace


class HealthResponse(BaseModel):
    status: str
    documents: int
    chunks: int


class CategoriesResponse(BaseModel):
    categories: list[str]


def load_index(docs_dir: Path | None = None, store: Path | None = None) -> KnowledgeIndex:
    """Index `docs_dir` (default: the bundled KB) with its lexicon, logging what extended it
    and any thesaurus expression that can never match (the app's and `pyrag explain`'s).
    With `store`, a folder, the index built last time from the same pages, lexicon and engine
    is read from it instead, and a new one is stored there (`engine.index_store`)."""
    index = index_store.obtain(docs_dir, store)
    if index.lexicon.sources:
        logger.info("lexicon extended by %s", ", ".join(index.lexicon.sources))
    if index.lexicon.unusable_bridges:
        logger.warning(
            "thesaurus expressions that can never match, ignored: %s",
            "; ".join(index.lexicon.unusable_bridges),
        )
    return index


def create_engine_app(docs_dir: Path | None = None, store: Path | None = None) -> FastAPI:
    """Index `docs_dir` (default: the bundled KB) now, or read it from `store` (see
    `load_index`), and return the py-rag v1 app."""
    started = time.perf_counter()
    index = load_index(docs_dir, store)
    logger.info(
        "py-rag engine ready: %d documents, %d chunks from %s in %.0f ms",
        len(index.documents),
        index.chunk_count,
        docs_dir or "the bundled knowledge base",
        (time.perf_counter() - started) * 1000,
    )
    app = FastAPI(title="lookup-knowledge py-rag engine", version="1")
    app.include_router(_router(index), prefix="/api/v1")
    return app


def run_standalone(docs_dir: Path | None, host: str, port: int, store: Path | None = None) -> None:
    """Serve the engine alone with uvicorn (`lookup-knowledge pyrag serve`)."""
    import uvicorn

    uvicorn.run(create_engine_app(docs_dir, store), host=host, port=port, log_config=None)


def _router(index: KnowledgeIndex) -> APIRouter:
    router = APIRouter()

    @router.post("/search", response_model=SearchResponse)
    def search(request: SearchRequest) -> SearchResponse:
        """Search the knowledge base; hits below the reference quality are never returned."""
        result = index.search(request.query, top_k=request.top_k, filters=request.filters)
        return _response(request, result)

    @router.get("/health", response_model=HealthResponse)
    def health() -> HealthResponse:
        """Liveness plus the size of the index."""
        return HealthResponse(status="ok", documents=len(index.documents), chunks=index.chunk_count)

    @router.get("/categories", response_model=CategoriesResponse)
    def categories() -> CategoriesResponse:
        """The values `filters: {"category": ...}` can take, sorted (a service convention)."""
        names = {doc.category for doc in index.documents if doc.category}
        return CategoriesResponse(categories=sorted(names, key=str.casefold))

    return router


def _response(request: SearchRequest, result: SearchResult) -> SearchResponse:
    hits = [
        SearchHit(
            evidence_key=hit.chunk.evidence_key,
            document_id=hit.chunk.document_id,
            source=hit.chunk.source,
            title=hit.chunk.title,
            breadcrumb=hit.chunk.breadcrumb,
            excerpt=hit.chunk.content,
            quality_score=hit.quality_score,
            relevance_level=hit.level,
        )
        for hit in result.hits
    ]
    return SearchResponse(
        query=request.query,
        mode=request.mode,
        hits=hits,
        relevance_level=hits[0].relevance_level if hits else None,
        evidence_status="supported" if hits else "no_evidence",
        retrieval_trace=RetrievalTrace(
            mode=request.mode,
            filters=request.filters,
            recall_count=result.recall_count,
            rerank_model=scoring.SCORER_NAME,
            no_evidence_basis=result.no_evidence_basis,
        ),
    )
