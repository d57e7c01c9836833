"""The lookup's fast path (api/lookup.py) accepts only what the route's model accepts, reads it
the same way, and answers exactly as the route does."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
import respx
from hypothesis import example, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from builders import pyrag_body, raw_hit
from lookup_knowledge.api.lookup import plainly_valid
from lookup_knowledge.api.schemas import LookupRequest
from support import PYRAG_SEARCH_URL, OpenClient, RecordingAudit

LOOKUP = "/lookup_knowledge"

ids = st.one_of(
    st.sampled_from(["run-1", "c.1_x", "a" * 128, "a" * 129, "", "bad id", "x\n", "é", "a{b}"]),
    st.text(alphabet="ab-_.:/ \n", max_size=6),
)
anything = st.one_of(st.none(), st.integers(-5, 5), st.booleans(), st.floats(allow_nan=False))
texts = st.one_of(st.sampled_from(["", " ", "网关超时", "x" * 129]), st.text(max_size=12))
filters = st.one_of(
    st.none(),
    st.dictionaries(st.sampled_from(["category", "k", ""]), st.one_of(texts, anything)),
    st.lists(texts, max_size=2),
    texts,
)
VALID = {"run_id": "run-1", "tool_call_id": "call-1", "query": "q"}
FIELDS = ["run_id", "runId", "tool_call_id", "toolCallId", "query", "step_id", "stepId", "filters"]
# A valid body with one field changed, added or taken away: where a hand check would slip.
near_valid = st.builds(
    lambda name, value, drop: {
        k: v for k, v in {**VALID, name: value}.items() if not (drop and k == name)
    },
    st.sampled_from(FIELDS),
    st.one_of(ids, texts, anything, filters),
    st.booleans(),
)
bodies = st.one_of(
    near_valid,
    st.fixed_dictionaries(
        {},
        optional={
            "run_id": st.one_of(ids, anything),
            "runId": st.one_of(ids, anything),
            "tool_call_id": st.one_of(ids, anything),
            "toolCallId": st.one_of(ids, anything),
            "query": st.one_of(texts, anything),
            "step_id": st.one_of(texts, anything),
            "stepId": st.one_of(texts, anything),
            "filters": filters,
            "extra": anything,
        },
    ),
    st.lists(texts, max_size=2),
    anything,
    texts,
)


def model_reading(data: Any) -> dict[str, Any] | None:
    try:
        request = LookupRequest.model_validate(data)
    except ValidationError:
        return None
    return request.model_dump()


@settings(max_examples=600, deadline=None)
@given(bodies)
@example({**VALID, "query": ""})
@example({**VALID, "query": " "})
@example({**VALID, "step_id": "s" * 128})
@example({**VALID, "step_id": "s" * 129})
@example({**VALID, "stepId": "s" * 129})
@example({**VALID, "step_id": None, "stepId": "s"})
@example({**VALID, "run_id": "r" * 128})
@example({**VALID, "run_id": "r" * 129})
@example({**VALID, "run_id": "run-1\n"})
@example({**VALID, "run_id": None, "runId": "run-1"})
@example({"runId": "run-1", "toolCallId": "call-1", "query": "q"})
@example({**VALID, "filters": {"k": 1}})
@example({**VALID, "filters": {}})
@example({**VALID, "filters": []})
@example({**VALID, "query": ["q"]})
def test_the_fast_path_takes_only_what_the_model_accepts_and_reads_it_the_same(data: Any) -> None:
    # Through JSON, as a request body arrives: orjson is what the fast path parses with.
    data = orjson.loads(orjson.dumps(data))
    command = plainly_valid(data)
    expected = model_reading(data)
    if command is None:
        assert expected is None  # left to the route, which refuses it; nothing valid is left
        return
    assert expected == {
        "run_id": command.run_id,
        "tool_call_id": command.tool_call_id,
        "query": command.query,
        "step_id": command.step_id,
        "filters": command.filters,
    }


@pytest.mark.parametrize(
    "body",
    [
        {"run_id": "run-1", "tool_call_id": "call-1", "query": "网关超时"},
        {"runId": "run-1", "toolCallId": "call-1", "query": "网关超时", "stepId": "s-1"},
        {"run_id": "run-1", "tool_call_id": "call-1", "query": " q ", "filters": {"c": "gw"}},
        {"run_id": "run-1", "tool_call_id": "call-1", "query": "q", "step_id": None, "x": [1]},
        {"run_id": "run-1", "runId": "other", "tool_call_id": "call-1", "query": "q"},
    ],
)
def test_plainly_valid_bodies_are_taken(body: dict[str, Any]) -> None:
    command = plainly_valid(body)
    assert command is not None
    assert model_reading(body) == {
        "run_id": command.run_id,
        "tool_call_id": command.tool_call_id,
        "query": command.query,
        "step_id": command.step_id,
        "filters": command.filters,
    }


def _without_call_id(content: bytes, call_id: str) -> bytes:
    return content.replace(call_id.encode(), b"CALL")


@pytest.mark.parametrize(
    "body",
    [
        {"run_id": "run-1", "query": "网关超时"},
        {"runId": "run-1", "query": "网关超时", "stepId": "s-1", "filters": {"category": "gw"}},
        {"run_id": "run-1", "query": "   "},  # valid for the model, refused by the service
        {"run_id": "run-1", "query": ""},  # refused by the model: 422
        {"run_id": "run-1", "query": 7},
    ],
)
async def test_the_fast_path_answers_as_the_route_does(
    open_client: OpenClient, audit: RecordingAudit, body: dict[str, Any]
) -> None:
    """`application/json` takes the fast path; a `+json` media type is JSON to FastAPI, never
    to the fast path: the same status, headers and bytes, and the same audit row."""
    hits = [raw_hit("gw#chunk-1", 0.9), raw_hit("gw#chunk-2", 0.7)]
    answers = []
    async with open_client(audit=audit) as client, respx.mock(assert_all_called=False) as mock:
        mock.post(PYRAG_SEARCH_URL).respond(200, json=pyrag_body(hits))
        for call_id, media in (("fast-1", "application/json"), ("slow-1", "application/x+json")):
            response = await client.post(
                LOOKUP,
                content=orjson.dumps({**body, "tool_call_id": call_id}),
                headers={"content-type": media},
            )
            headers = {k: v for k, v in response.headers.items() if k != "x-request-id"}
            answers.append(
                (response.status_code, headers, _without_call_id(response.content, call_id))
            )
    assert answers[0] == answers[1]
    fast, route = audit.records
    assert (fast.success, fast.error_code, fast.query, fast.step_id) == (
        route.success,
        route.error_code,
        route.query,
        route.step_id,
    )


async def test_a_served_lookup_counts_under_its_route(
    open_client: OpenClient, audit: RecordingAudit
) -> None:
    async with open_client(audit=audit) as client, respx.mock() as mock:
        mock.post(PYRAG_SEARCH_URL).respond(200, json=pyrag_body([raw_hit("gw#chunk-1", 0.9)]))
        response = await client.post(
            LOOKUP, json={"run_id": "run-1", "tool_call_id": "call-1", "query": "网关"}
        )
        assert response.status_code == 200
        metrics = (await client.get("/metrics")).text
    assert 'route="/lookup_knowledge",status="200"' in metrics
