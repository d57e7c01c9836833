"""Plain-data builders shared by the tests (py-rag hits, domain hits, blocks, dev cases)."""

from __future__ import annotations

from typing import Any

from lookup_knowledge.domain.models import EvidenceBlock, KnowledgeSearchHit


def raw_hit(key: str | None, score: Any = 0.8, **extra: Any) -> dict[str, Any]:
    """One py-rag hit as JSON; `key` like 'gw#chunk-1' also gives the document id."""
    hit: dict[str, Any] = {
        "document_id": key.split("#")[0] if key else None,
        "source": f"runbooks/{key.split('#')[0]}.md" if key else None,
        "title": (key or "untitled").split("#")[0].title(),
        "breadcrumb": f"{(key or 'x').split('#')[0].title()} > Steps",
        "excerpt": f"Excerpt of {key}.",
        "quality_score": score,
        "relevance_level": "PRECISE",
    }
    if key is not None:
        hit["evidence_key"] = key
    hit.update(extra)
    return {k: v for k, v in hit.items() if v is not None or k in extra}


def pyrag_body(hits: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "query": "q",
        "mode": "hybrid",
        "hits": hits,
        "relevance_level": "PRECISE",
        "evidence_status": "supported" if hits else "no_evidence",
        "retrieval_trace": {
            "mode": "hybrid",
            "filters": None,
            "recall_count": len(hits),
            "rerank_model": "test",
            "no_evidence_basis": None,
        },
    }
    body.update(extra)
    return body


def hit(key: str, score: float, rank: int, **extra: Any) -> KnowledgeSearchHit:
    doc, _, chunk = key.partition("#chunk-")
    values: dict[str, Any] = {
        "evidence_key": key,
        "doc_id": doc,
        "chunk_index": int(chunk) if chunk else None,
        "content": f"Content of {key}.",
        "score": score,
        "original_rank": rank,
        "source": f"runbooks/{doc}.md",
        "title": doc.title(),
        "breadcrumb": f"{doc.title()} > Steps",
        "hit_reasons": (f"semantic_rank:{rank}",),
    }
    values.update(extra)
    return KnowledgeSearchHit(**values)


def block(key: str, content: str = "text", **extra: Any) -> EvidenceBlock:
    doc = key.split("#")[0]
    values: dict[str, Any] = {
        "evidence_key": key,
        "doc_id": doc,
        "content": content,
        "quality_score": 0.8,
        "original_rank": 1,
        "source": f"runbooks/{doc}.md",
        "breadcrumb": f"{doc} > Steps",
        "hit_reasons": ("semantic_rank:1",),
    }
    values.update(extra)
    return EvidenceBlock(**values)


WORKED_EXAMPLE = [
    ("gw#chunk-1", 0.91),
    ("gw#chunk-3", 0.95),
    ("gw#chunk-1", 0.91),
    ("gw#chunk-0", 0.88),
    ("nginx#chunk-2", 0.70),
    ("k8s#chunk-0", 0.62),
    ("lb#chunk-4", 0.55),
    ("dns#chunk-1", 0.52),
]


def dev_case(
    case_id: str, query: str, relevant: list[str], split: str, kind: str
) -> dict[str, Any]:
    """One development case as its file holds it (eval/dev/README.md), in English."""
    return {
        "id": case_id,
        "query": query,
        "lang": "en",
        "kind": kind,
        "relevant": relevant,
        "split": split,
    }
