"""docs/pipeline.md#project: the projector's gates over a serialized LookupResult."""

from __future__ import annotations

import json
from typing import Any

import pytest

from lookup_knowledge.domain.contract import RagToolResult
from lookup_knowledge.domain.errors import ProjectionOverBudget
from lookup_knowledge.pipeline.limits import ProjectionLimits
from lookup_knowledge.pipeline.project import project

LIMITS = ProjectionLimits()
CONTRACT_KEYS = {
    "evidence_status",
    "tool_call_id",
    "query",
    "evidence",
    "returned_count",
    "relevance_level",
    "truncated",
}


def blk(key: str | None = None, content: str = "text", **extra: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "evidence_key": key,
        "doc_id": key.split("#")[0] if key else None,
        "content": content,
        "source": "runbooks/x.md",
        "title": "X",
        "breadcrumb": "X > Y",
    }
    data.update(extra)
    return data


def lookup_json(
    blocks: list[dict[str, Any]], query: str = "q", level: Any = "PRECISE", **extra: Any
) -> str:
    data = {
        "found": bool(blocks),
        "query": query,
        "evidence_blocks": blocks,
        "relevance_level": level,
        "top_similarity": 0.9,
    }
    data.update(extra)
    return json.dumps(data, ensure_ascii=False)


def run(blocks: list[dict[str, Any]], limits: ProjectionLimits = LIMITS, **kw: Any):  # type: ignore[no-untyped-def]
    projection = project(lookup_json(blocks, **kw), tool_call_id="call_x1", limits=limits)
    wire = json.loads(projection.body)
    return projection, wire


def test_the_contract_shape_has_exactly_the_spec_keys_and_no_scores() -> None:
    projection, wire = run([blk("gw#chunk-1", "Check the upstream timeout first ...")])
    assert wire == {
        "evidence_status": "EVIDENCE_FOUND",
        "tool_call_id": "call_x1",
        "query": "q",
        "evidence": [
            {
                "document_id": "gw#chunk-1",
                "source": "runbooks/x.md",
                "title": "X",
                "breadcrumb": "X > Y",
                "excerpt": "Check the upstream timeout first ...",
            }
        ],
        "returned_count": 1,
        "relevance_level": "PRECISE",
        "truncated": False,
    }
    assert set(wire) <= CONTRACT_KEYS
    RagToolResult.model_validate_json(projection.body)


def test_the_body_is_compact_utf8_with_non_ascii_unescaped() -> None:
    projection, _ = run([blk("gw#chunk-1", "网关超时")], query="网关超时怎么排查")
    assert "网关超时怎么排查".encode() in projection.body
    assert b"\\u" not in projection.body
    assert b": " not in projection.body and b", " not in projection.body


def test_null_and_empty_optional_fields_are_omitted_never_null() -> None:
    _, wire = run([blk("a#chunk-0", "A", source=None, title="", breadcrumb="  ")])
    assert wire["evidence"][0] == {"document_id": "a#chunk-0", "excerpt": "A"}
    _, empty = run([], level=None)
    assert "evidence" not in empty and "relevance_level" not in empty
    assert b"null" not in project(lookup_json([]), tool_call_id="c", limits=LIMITS).body


def test_an_item_keeps_the_contract_field_order_on_the_wire() -> None:
    projection, _ = run([blk("a#chunk-0", "A", source="s.md", title="T", breadcrumb="T > S")])
    item = json.loads(projection.body)["evidence"][0]
    assert list(item) == ["document_id", "source", "title", "breadcrumb", "excerpt"]
    assert item == {
        "document_id": "a#chunk-0",
        "source": "s.md",
        "title": "T",
        "breadcrumb": "T > S",
        "excerpt": "A",
    }


def test_a_query_echo_over_the_limit_is_cut_and_flagged() -> None:
    _, wire = run([blk("a#chunk-0")], query="q" * 501)
    assert wire["query"] == "q" * 500
    assert wire["truncated"] is True
    _, exact = run([blk("a#chunk-0")], query="q" * 500)
    assert exact["truncated"] is False


def test_a_ninth_item_is_not_added_and_flagged() -> None:
    projection, wire = run([blk(f"d{i}#chunk-0") for i in range(10)])
    assert [e["document_id"] for e in wire["evidence"]] == [f"d{i}#chunk-0" for i in range(8)]
    assert wire["truncated"] is True
    assert "max_evidence" in projection.summary.cuts
    _, eight = run([blk(f"d{i}#chunk-0") for i in range(8)])
    assert eight["truncated"] is False


@pytest.mark.parametrize(
    ("raw", "identity"),
    [
        ({"evidence_key": "k#chunk-3", "doc_id": "k", "chunk_index": 3}, "k#chunk-3"),
        ({"evidence_key": None, "doc_id": "doc-a"}, "doc-a"),
        ({"evidence_key": " ", "doc_id": "doc-a", "chunk_index": 4}, "doc-a#chunk-4"),
        ({"evidence_key": None, "doc_id": None}, "evidence-1"),
    ],
)
def test_identity_falls_back_from_key_to_document_to_ordinal(
    raw: dict[str, Any], identity: str
) -> None:
    _, wire = run([{"content": "text", **raw}])
    assert wire["evidence"][0]["document_id"] == identity


def test_an_identity_already_emitted_is_skipped_and_flagged() -> None:
    projection, wire = run([blk("a#chunk-0", "A"), blk("a#chunk-0", "again"), blk("b#chunk-0")])
    assert [e["excerpt"] for e in wire["evidence"]] == ["A", "text"]
    assert wire["truncated"] is True
    assert projection.summary.cuts == ("duplicate_identity",)


def test_an_excerpt_over_the_limit_is_cut_and_flagged() -> None:
    _, wire = run([blk("a#chunk-0", "x" * 1201)])
    assert wire["evidence"][0]["excerpt"] == "x" * 1200
    assert wire["truncated"] is True
    _, exact = run([blk("a#chunk-0", "x" * 1200)])
    assert exact["truncated"] is False


def test_the_byte_budget_drops_items_from_the_tail_with_cjk_text() -> None:
    blocks = [blk(f"d{i}#chunk-0", "网" * 1200) for i in range(8)]  # 3600 bytes per excerpt
    projection, wire = run(blocks)
    assert len(projection.body) <= 16384
    kept = [e["document_id"] for e in wire["evidence"]]
    assert kept == [f"d{i}#chunk-0" for i in range(len(kept))]
    assert 1 <= len(kept) < 8
    assert wire["truncated"] is True
    assert wire["returned_count"] == len(kept)
    assert "max_bytes" in projection.summary.cuts
    assert projection.summary.body_bytes == len(projection.body)


def test_the_byte_budget_is_measured_on_the_exact_bytes_sent() -> None:
    limits = ProjectionLimits(max_bytes=1000)
    for n in range(1, 400, 7):
        projection, _ = run([blk("a#chunk-0", "网" * n), blk("b#chunk-0", "é" * n)], limits=limits)
        assert len(projection.body) <= 1000


def test_a_result_emptied_by_the_byte_budget_says_no_evidence_without_level() -> None:
    _projection, wire = run([blk("a#chunk-0", "网" * 1000)], limits=ProjectionLimits(max_bytes=600))
    assert wire["evidence_status"] == "NO_EVIDENCE"
    assert "relevance_level" not in wire and "evidence" not in wire
    assert wire["returned_count"] == 0
    assert wire["truncated"] is True


def test_a_body_still_over_budget_when_empty_fails_closed() -> None:
    with pytest.raises(ProjectionOverBudget):
        project(
            lookup_json([], query="网" * 400),
            tool_call_id="c",
            limits=ProjectionLimits(max_bytes=300),
        )


def test_camel_case_keys_are_read_too() -> None:
    data = {
        "found": True,
        "query": "q",
        "relevanceLevel": "REFERENCE",
        "evidenceBlocks": [
            {"evidenceKey": "a#chunk-0", "docId": "a", "content": "A"},
            {"docId": "b", "chunkIndex": 2, "content": "B"},
        ],
    }
    projection = project(json.dumps(data), tool_call_id="c", limits=LIMITS)
    wire = json.loads(projection.body)
    assert [e["document_id"] for e in wire["evidence"]] == ["a#chunk-0", "b#chunk-2"]
    assert wire["relevance_level"] == "REFERENCE"


@pytest.mark.parametrize("level", ["HIGHLY_RELEVANT", "precise", 3, None])
def test_an_unknown_relevance_level_is_absent(level: Any) -> None:
    _, wire = run([blk("a#chunk-0")], level=level)
    assert "relevance_level" not in wire
    assert wire["evidence_status"] == "EVIDENCE_FOUND"


def test_no_blocks_means_no_evidence_and_no_level_even_if_one_was_given() -> None:
    _, wire = run([], level="PRECISE")
    assert wire["evidence_status"] == "NO_EVIDENCE"
    assert "relevance_level" not in wire
    assert wire["returned_count"] == 0
    assert wire["truncated"] is False


def test_a_blank_excerpt_is_not_emitted() -> None:
    _, wire = run([blk("a#chunk-0", "  "), blk("b#chunk-0", "B")])
    assert [e["document_id"] for e in wire["evidence"]] == ["b#chunk-0"]


def test_returned_count_equals_the_number_of_items() -> None:
    for n in range(0, 12):
        _, wire = run([blk(f"d{i}#chunk-0") for i in range(n)])
        assert wire["returned_count"] == len(wire.get("evidence", []))


def test_the_projection_limits_are_configurable() -> None:
    limits = ProjectionLimits(max_query_chars=3, max_evidence=1, max_excerpt_chars=2)
    _, wire = run([blk("a#chunk-0", "abc"), blk("b#chunk-0")], limits=limits, query="abcd")
    assert wire["query"] == "abc"
    assert [e["excerpt"] for e in wire["evidence"]] == ["ab"]


def test_the_internal_result_projects_to_the_same_bytes_as_its_json() -> None:
    from builders import pyrag_body, raw_hit
    from lookup_knowledge.adapters.pyrag import parse_search_body
    from lookup_knowledge.pipeline.run import run_pipeline
    from lookup_knowledge.settings import Settings

    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    hits = [raw_hit(f"doc{i}#chunk-{i}", 0.9 - i / 100) for i in range(12)]
    outcome = parse_search_body(json.dumps(pyrag_body(hits)).encode())
    output = run_pipeline(
        "网关超时",
        outcome,
        tool_call_id="call_x1",
        limits=settings.pipeline_limits,
        projection_limits=settings.projection_limits,
    )
    from_json = project(
        output.lookup.model_dump_json(), tool_call_id="call_x1", limits=settings.projection_limits
    )

    assert output.projection.result.returned_count > 0
    assert output.projection.body == from_json.body
    assert output.projection.summary == from_json.summary
