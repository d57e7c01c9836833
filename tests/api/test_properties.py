"""Property-based: random py-rag answers never break the bounds or the honesty of the contract."""

from __future__ import annotations

import asyncio
import itertools
import json
import math
from typing import Any

import httpx
import respx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lookup_knowledge.app import create_app
from lookup_knowledge.domain.contract import RagToolResult
from lookup_knowledge.domain.models import KnowledgeSearchHit
from lookup_knowledge.pipeline.assemble import assemble
from lookup_knowledge.pipeline.limits import PipelineLimits, ProjectionLimits
from lookup_knowledge.pipeline.pack import pack_context
from lookup_knowledge.pipeline.postprocess import postprocess
from lookup_knowledge.pipeline.project import project
from lookup_knowledge.settings import Settings
from support import PYRAG_SEARCH_URL, PYRAG_TEST_URL, RecordingAudit

text = st.text(alphabet=st.sampled_from('abc xyz网关超时é\n"\\\t😀'), max_size=60)
long_text = st.one_of(
    text, st.builds(lambda c, n: c * n, st.sampled_from("a网😀"), st.integers(0, 3000))
)
scores = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.none(),
    st.text(max_size=3),
    st.integers(-5, 5),
    st.booleans(),
)
keys = st.one_of(
    st.none(),
    st.just(""),
    st.builds(lambda d, c: f"doc{d}#chunk-{c}", st.integers(0, 4), st.integers(0, 3)),
    st.builds(lambda d: f"doc{d}", st.integers(0, 4)),
)
raw_hits = st.fixed_dictionaries(
    {},
    optional={
        "evidence_key": keys,
        "document_id": st.one_of(st.none(), st.builds(lambda d: f"doc{d}", st.integers(0, 4))),
        "chunk_index": st.one_of(st.none(), st.integers(-1, 5), text),
        "excerpt": st.one_of(st.none(), long_text),
        "quality_score": scores,
        "source": st.one_of(st.none(), text),
        "title": st.one_of(st.none(), text),
        "breadcrumb": st.one_of(st.none(), text),
        "relevance_level": st.sampled_from(["PRECISE", "REFERENCE", "junk"]),
        "surprise": st.integers(),
    },
)
responses = st.fixed_dictionaries(
    {"hits": st.lists(st.one_of(raw_hits, st.integers(), st.none()), max_size=14)},
    optional={
        "evidence_status": st.sampled_from(["supported", "no_evidence", "weird"]),
        "retrieval_trace": st.one_of(
            st.none(), st.dictionaries(text, text, max_size=3), st.integers()
        ),
        "query": text,
        "mode": text,
    },
)
limits_strategy = st.builds(
    ProjectionLimits,
    max_query_chars=st.integers(1, 600),
    max_evidence=st.integers(0, 10),
    max_excerpt_chars=st.integers(1, 1500),
    max_bytes=st.integers(4000, 20000),
)


def _json_safe(body: dict[str, Any]) -> str:
    return json.dumps(body, allow_nan=True)


_ids = itertools.count()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=responses, query=st.text(min_size=1, max_size=700).filter(lambda q: q.strip()))
def test_a_well_formed_200_from_py_rag_never_gives_a_5xx(body: dict[str, Any], query: str) -> None:
    async def scenario() -> httpx.Response:
        settings_ = Settings(
            _env_file=None, pyrag_base_url=PYRAG_TEST_URL, pyrag_http_transport="httpx"
        )  # type: ignore[call-arg]
        app = create_app(settings_, audit=RecordingAudit())
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://lk") as client:
                with respx.mock() as mock:
                    mock.post(PYRAG_SEARCH_URL).respond(
                        200, content=_json_safe(body), headers={"content-type": "application/json"}
                    )
                    return await client.post(
                        "/lookup_knowledge",
                        json={
                            "run_id": "run-p",
                            "tool_call_id": f"call-{next(_ids)}",
                            "query": query,
                        },
                    )

    response = asyncio.run(scenario())
    assert response.status_code == 200, response.text
    result = RagToolResult.model_validate_json(response.content)
    assert len(response.content) <= 16384
    assert result.returned_count == len(result.evidence)


hits_strategy = st.lists(
    st.builds(
        lambda d, c, content, score: (f"doc{d}#chunk-{c}", f"doc{d}", c, content, score),
        st.integers(0, 5),
        st.integers(0, 3),
        long_text.filter(lambda t: t.strip()),
        st.floats(allow_nan=True, allow_infinity=True),
    ),
    max_size=16,
)


@settings(max_examples=300, deadline=None)
@given(
    raw=hits_strategy,
    ranks=st.randoms(use_true_random=False),
    query=long_text,
    limits=limits_strategy,
    return_n=st.integers(1, 12),
    per_doc=st.integers(1, 4),
)
def test_every_projection_respects_every_bound_keeps_rank_order_and_flags_cuts(
    raw: list[tuple[str, str, int, str, float]],
    ranks: Any,
    query: str,
    limits: ProjectionLimits,
    return_n: int,
    per_doc: int,
) -> None:
    order = list(range(1, len(raw) + 1))
    ranks.shuffle(order)
    hits = [
        KnowledgeSearchHit(
            evidence_key=key,
            doc_id=doc,
            chunk_index=c,
            content=content,
            score=score,
            original_rank=rank,
            hit_reasons=(f"semantic_rank:{rank}",),
        )
        for (key, doc, c, content, score), rank in zip(raw, order, strict=True)
    ]
    pipeline_limits = PipelineLimits(return_n=return_n, max_chunks_per_document=per_doc)
    post = postprocess(hits, limits=pipeline_limits)
    pack = pack_context(post.blocks, char_budget=pipeline_limits.pack_char_budget)
    lookup = assemble(query, post, pack, retrieval_trace=None)
    projection = project(lookup.model_dump_json(), tool_call_id="call", limits=limits)
    result = RagToolResult.model_validate_json(projection.body)

    assert len(projection.body) <= limits.max_bytes
    assert len(result.query) <= limits.max_query_chars
    assert len(result.evidence) <= limits.max_evidence
    assert all(len(item.excerpt) <= limits.max_excerpt_chars for item in result.evidence)
    assert result.returned_count == len(result.evidence)
    assert pack.used_chars <= pack.char_budget
    assert len(post.blocks) <= return_n
    # rank order: evidence follows py-rag's ranks, never the scores
    rank_of = {
        h.evidence_key: h.original_rank for h in sorted(hits, key=lambda h: -h.original_rank)
    }
    shown = [rank_of[item.document_id] for item in result.evidence]
    assert shown == sorted(shown)
    # levels only with evidence; NO_EVIDENCE exactly when empty
    assert (result.evidence_status == "EVIDENCE_FOUND") == bool(result.evidence)
    if not result.evidence:
        assert result.relevance_level is None
    # honesty: anything the projector did not pass through whole is flagged
    whole = (
        result.query == query
        and [i.document_id for i in result.evidence] == [b.evidence_key for b in post.blocks]
        and [i.excerpt for i in result.evidence] == [b.content for b in post.blocks]
    )
    assert result.truncated is not whole
    if post.top_similarity is not None:
        assert 0.0 <= post.top_similarity <= 1.0 and not math.isnan(post.top_similarity)
