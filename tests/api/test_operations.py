"""Operations through the HTTP API: auth matrix, readiness, metrics, request ids and log lines."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx

from builders import pyrag_body, raw_hit
from lookup_knowledge.domain.audit import AuditStatus
from support import PYRAG_SEARCH_URL, PYRAG_TEST_URL, OpenClient, RecordingAudit

LOOKUP_TOKEN = "agent-secret-1"
LEDGER_TOKEN = "guard-secret-1"
AUTH = {"lookup_api_tokens": f"other-agent, {LOOKUP_TOKEN}", "ledger_api_tokens": LEDGER_TOKEN}
BODY = {"run_id": "run-1", "tool_call_id": "call-1", "query": "redis memory usage high"}


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.mark.parametrize(
    ("method", "path", "headers", "status", "code"),
    [
        ("POST", "/lookup_knowledge", {}, 401, "UNAUTHORIZED"),
        ("POST", "/lookup_knowledge", bearer("wrong"), 401, "UNAUTHORIZED"),
        ("POST", "/lookup_knowledge", {"Authorization": LOOKUP_TOKEN}, 401, "UNAUTHORIZED"),
        ("POST", "/lookup_knowledge", bearer(LEDGER_TOKEN), 403, "FORBIDDEN"),
        ("POST", "/lookup_knowledge", bearer(LOOKUP_TOKEN), 200, None),
        ("POST", "/lookup_knowledge", bearer("other-agent"), 200, None),
        ("GET", "/ledger/run-1/call-1", {}, 401, "UNAUTHORIZED"),
        ("GET", "/ledger/run-1/call-1", bearer("wrong"), 401, "UNAUTHORIZED"),
        ("GET", "/ledger/run-1/call-1", bearer(LOOKUP_TOKEN), 403, "FORBIDDEN"),
        ("GET", "/ledger/run-1/call-1", bearer(LEDGER_TOKEN), 404, "NOT_FOUND"),
        ("GET", "/ledger/run-1", bearer(LOOKUP_TOKEN), 403, "FORBIDDEN"),
        ("GET", "/ledger/run-1", bearer(LEDGER_TOKEN), 200, None),
        ("GET", "/healthz", {}, 200, None),
        ("GET", "/readyz", {}, 200, None),
        ("GET", "/metrics", {}, 200, None),
    ],
)
async def test_the_auth_matrix(
    open_client: OpenClient,
    method: str,
    path: str,
    headers: dict[str, str],
    status: int,
    code: str | None,
) -> None:
    async with open_client(audit=RecordingAudit(), **AUTH) as client:
        with respx.mock(assert_all_called=False) as mock:
            mock.post(PYRAG_SEARCH_URL).respond(200, json=pyrag_body([raw_hit("a#chunk-0")]))
            mock.get(f"{PYRAG_TEST_URL}/api/v1/health").respond(200, json={"status": "ok"})
            response = await client.request(
                method, path, headers=headers, json=BODY if method == "POST" else None
            )
    assert response.status_code == status, response.text
    if code is not None:
        assert response.json()["error"]["code"] == code
    if status == 401:
        assert response.headers["www-authenticate"] == "Bearer"


@pytest.mark.parametrize(
    ("authorization", "status"),
    [
        (b"Bearer " + LOOKUP_TOKEN.encode(), 200),
        (b"bearer   " + LOOKUP_TOKEN.encode() + b" \t", 200),
        (b"Bearer " + LOOKUP_TOKEN.encode() + b"\xa0", 401),
        (b"Bearer\xa0" + LOOKUP_TOKEN.encode(), 401),
        (b"Bearer\t" + LOOKUP_TOKEN.encode(), 401),
        (b"Bearer " + LOOKUP_TOKEN.encode() + b" extra", 401),
        (b"Bearer", 401),
    ],
    ids=[
        "plain",
        "any case, spaces and a trailing tab",
        "trailing no-break space",
        "no-break space after the scheme",
        "tab after the scheme",
        "a second word",
        "no token",
    ],
)
async def test_bearer_credentials_are_parsed_as_rfc_6750_writes_them(
    open_client: OpenClient, authorization: bytes, status: int
) -> None:
    async with (
        open_client(audit=RecordingAudit(), **AUTH) as client,
        respx.mock(assert_all_called=False) as mock,
    ):
        mock.post(PYRAG_SEARCH_URL).respond(200, json=pyrag_body([raw_hit("a#chunk-0")]))
        response = await client.post(
            "/lookup_knowledge", json=BODY, headers={"Authorization": authorization}
        )
    assert response.status_code == status, response.text


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("TRACE", "/healthz", {"GET", "HEAD"}),
        ("POST", "/readyz", {"GET", "HEAD"}),
        ("GET", "/lookup_knowledge", {"POST"}),
        ("HEAD", "/lookup_knowledge", {"POST"}),
        ("DELETE", "/ledger/run-1/call-1", {"GET", "HEAD"}),
    ],
)
async def test_a_wrong_method_is_405_with_the_allowed_ones(
    open_client: OpenClient, method: str, path: str, allow: set[str]
) -> None:
    async with open_client(audit=RecordingAudit()) as client:
        response = await client.request(method, path)
    assert response.status_code == 405
    if method != "HEAD":
        assert response.json()["error"]["code"] == "METHOD_NOT_ALLOWED"
    assert {m.strip() for m in response.headers["allow"].split(",")} == allow


@pytest.mark.parametrize(
    "path", ["/healthz", "/readyz", "/ledger/run-1", "/ledger/run-1/call-1", "/metrics", "/nope"]
)
async def test_head_answers_like_get_without_a_body(open_client: OpenClient, path: str) -> None:
    async with (
        open_client(audit=RecordingAudit()) as client,
        respx.mock(assert_all_called=False) as mock,
    ):
        mock.post(PYRAG_SEARCH_URL).respond(200, json=pyrag_body([raw_hit("a#chunk-0")]))
        mock.get(url__startswith=PYRAG_TEST_URL).respond(200, json={"status": "ok"})
        await client.post("/lookup_knowledge", json=BODY)
        got = await client.get(path)
        head = await client.head(path)

    assert head.status_code == got.status_code
    assert head.content == b""
    assert head.headers["content-type"] == got.headers["content-type"]
    if path not in ("/readyz", "/metrics"):  # measured latencies, moving counters
        assert head.headers["content-length"] == str(len(got.content))


async def test_without_tokens_every_route_is_open_and_a_warning_is_logged(
    open_client: OpenClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    async with open_client(audit=RecordingAudit()) as client:
        response = await client.get("/ledger/run-1")
    assert response.status_code == 200
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("LOOKUP_API_TOKENS" in w for w in warnings)
    assert any("LEDGER_API_TOKENS" in w for w in warnings)


class DownAudit(RecordingAudit):
    """An audit whose database went away after start: rows wait in its spool."""

    async def status(self) -> AuditStatus:
        return AuditStatus(status="degraded", backend="mysql", error="database is away")


class DownLedger:
    """A ledger whose store is unreachable (only ping is asked by /readyz)."""

    async def ping(self) -> None:
        from lookup_knowledge.domain.errors import LedgerUnavailable

        raise LedgerUnavailable("the evidence ledger is unreachable")


async def _readyz(
    open_client: OpenClient, pyrag: httpx.Response | Exception, **kwargs: Any
) -> httpx.Response:
    async with open_client(**kwargs) as client, respx.mock() as mock:
        route = mock.get(f"{PYRAG_TEST_URL}/api/v1/health")
        if isinstance(pyrag, Exception):
            route.mock(side_effect=pyrag)
        else:
            route.mock(return_value=pyrag)
        return await client.get("/readyz")


async def test_readyz_is_200_when_every_dependency_is_up(open_client: OpenClient) -> None:
    response = await _readyz(open_client, httpx.Response(200), audit=RecordingAudit())
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ready"
    assert {name: c["status"] for name, c in body["checks"].items()} == {
        "ledger": "up",
        "audit": "up",
        "pyrag": "up",
    }
    assert all(c["latency_ms"] >= 0 for c in body["checks"].values())
    assert body["checks"]["ledger"]["backend"] == "memory"


async def test_readyz_names_an_unreachable_py_rag(open_client: OpenClient) -> None:
    response = await _readyz(open_client, httpx.ConnectError("refused"), audit=RecordingAudit())
    assert response.status_code == 503
    checks = response.json()["checks"]
    assert checks["pyrag"]["status"] == "down" and "unreachable" in checks["pyrag"]["error"]
    assert checks["ledger"]["status"] == "up"


async def test_readyz_names_a_failing_py_rag(open_client: OpenClient) -> None:
    response = await _readyz(open_client, httpx.Response(503), audit=RecordingAudit())
    assert response.status_code == 503
    assert response.json()["checks"]["pyrag"]["status"] == "down"


async def test_readyz_names_an_unreachable_ledger(open_client: OpenClient) -> None:
    response = await _readyz(
        open_client, httpx.Response(200), audit=RecordingAudit(), ledger=DownLedger()
    )  # type: ignore[arg-type]
    assert response.status_code == 503
    assert response.json()["checks"]["ledger"]["status"] == "down"


@pytest.mark.redis
async def test_readyz_names_an_unreachable_redis(open_client: OpenClient) -> None:
    response = await _readyz(
        open_client, httpx.Response(200), audit=RecordingAudit(), redis_url="redis://127.0.0.1:1/0"
    )
    assert response.status_code == 503
    ledger = response.json()["checks"]["ledger"]
    assert (ledger["status"], ledger["backend"]) == ("down", "redis")


async def test_readyz_reports_audit_spool_mode_as_degraded_but_ready(
    open_client: OpenClient,
) -> None:
    response = await _readyz(open_client, httpx.Response(200), audit=DownAudit())
    assert response.status_code == 200
    assert response.json()["checks"]["audit"]["status"] == "degraded"


async def test_readyz_names_the_audit_when_its_spool_cannot_be_written(
    open_client: OpenClient, tmp_path: Path
) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    response = await _readyz(
        open_client, httpx.Response(200), audit=UnspooledAudit(), audit_spool_dir=blocked
    )
    assert response.status_code == 503
    audit = response.json()["checks"]["audit"]
    assert audit["status"] == "down" and "spool" in audit["error"]


class UnspooledAudit(RecordingAudit):
    async def status(self) -> AuditStatus:
        return AuditStatus(status="down", backend="mysql", error="spool not writable: EROFS")


async def test_readyz_with_the_real_sqlite_audit_is_ready(open_client: OpenClient) -> None:
    response = await _readyz(open_client, httpx.Response(200))
    assert response.status_code == 200, response.text
    assert response.json()["checks"]["audit"]["status"] == "up"


def _sample(text: str, name: str, **labels: str) -> float:
    total = 0.0
    for line in text.splitlines():
        if not line.startswith(name):
            continue
        head, _, value = line.rpartition(" ")
        metric, _, label_text = head.partition("{")
        if metric != name:
            continue
        if all(f'{k}="{v}"' in label_text for k, v in labels.items()):
            total += float(value)
    return total


async def test_metrics_are_present_and_move_after_lookups(open_client: OpenClient) -> None:
    async with open_client(audit=RecordingAudit()) as client, respx.mock() as mock:
        mock.post(PYRAG_SEARCH_URL).mock(
            side_effect=[
                httpx.Response(200, json=pyrag_body([raw_hit("a#chunk-0", 0.9)])),
                httpx.Response(200, json=pyrag_body([])),
                httpx.Response(500),
            ]
        )
        before = (await client.get("/metrics")).text
        for call in ("c1", "c2", "c3"):
            await client.post("/lookup_knowledge", json={**BODY, "tool_call_id": call})
        await client.post("/lookup_knowledge", json={**BODY, "tool_call_id": "c1"})  # replay
        await client.post(
            "/lookup_knowledge", json={**BODY, "tool_call_id": "c1", "query": "other"}
        )  # conflict
        after = (await client.get("/metrics")).text

    assert _sample(before, "lk_lookups_total") == 0
    assert _sample(after, "lk_http_requests_total", route="/lookup_knowledge", status="200") == 3
    assert _sample(after, "lk_http_requests_total", route="/lookup_knowledge", status="502") == 1
    assert _sample(after, "lk_lookup_duration_seconds_count") == 5
    for stage in ("pyrag", "pipeline", "ledger", "audit"):
        assert _sample(after, "lk_lookup_stage_duration_seconds_count", stage=stage) >= 1
    assert _sample(after, "lk_lookup_evidence_status_total", evidence_status="EVIDENCE_FOUND") == 2
    assert _sample(after, "lk_lookup_evidence_status_total", evidence_status="NO_EVIDENCE") == 1
    assert _sample(after, "lk_lookup_relevance_level_total", relevance_level="PRECISE") == 2
    assert _sample(after, "lk_lookup_truncated_total", truncated="false") == 3
    assert _sample(after, "lk_pyrag_errors_total", kind="status") == 1
    assert _sample(after, "lk_ledger_replays_total") == 1
    assert _sample(after, "lk_ledger_conflicts_total") == 1
    assert "lk_audit_spool_depth 0.0" in after


async def test_every_response_carries_a_request_id_and_keeps_a_valid_incoming_one(
    open_client: OpenClient,
) -> None:
    async with open_client(audit=RecordingAudit()) as client:
        generated = await client.get("/healthz")
        kept = await client.get("/healthz", headers={"X-Request-ID": "req-123"})
        replaced = await client.get("/healthz", headers={"X-Request-ID": "bad id\n"})
        error = await client.get("/nope")
    assert len(generated.headers["x-request-id"]) == 32
    assert kept.headers["x-request-id"] == "req-123"
    assert replaced.headers["x-request-id"] != "bad id\n"
    assert "x-request-id" in error.headers


async def test_one_structured_line_per_lookup_carries_ids_and_no_query_text_at_info(
    open_client: OpenClient, caplog: pytest.LogCaptureFixture
) -> None:
    from lookup_knowledge.observability.logs import JsonFormatter

    caplog.set_level(logging.INFO, logger="lookup_knowledge.lookup")
    async with open_client(audit=RecordingAudit()) as client, respx.mock() as mock:
        mock.post(PYRAG_SEARCH_URL).respond(200, json=pyrag_body([raw_hit("a#chunk-0", 0.9)]))
        response = await client.post(
            "/lookup_knowledge", json=BODY, headers={"X-Request-ID": "req-lookup-1"}
        )
    (record,) = [r for r in caplog.records if r.name == "lookup_knowledge.lookup"]
    from lookup_knowledge.observability.logs import request_id_var

    token = request_id_var.set("req-lookup-1")
    try:
        line = json.loads(JsonFormatter().format(record))
    finally:
        request_id_var.reset(token)
    assert response.headers["x-request-id"] == "req-lookup-1"
    assert line["run_id"] == "run-1" and line["tool_call_id"] == "call-1"
    assert line["status"] == "ok" and line["returned_count"] == 1
    assert line["request_id"] == "req-lookup-1"
    assert set(line["stages_ms"]) >= {"pyrag", "pipeline", "ledger"}
    assert "query" not in line
    assert BODY["query"] not in json.dumps(line)
    assert len(line["query_sha256"]) == 64


def test_log_lines_are_single_json_objects_without_uvicorn_colour_codes() -> None:
    from lookup_knowledge.observability.logs import JsonFormatter

    record = logging.LogRecord(
        "uvicorn.error", logging.INFO, __file__, 1, "Started %s", ("x",), None
    )
    record.color_message = "Started \x1b[36mx\x1b[0m"
    record.run_id = "run-1"
    line = JsonFormatter().format(record)
    assert "\n" not in line
    data = json.loads(line)
    assert data["message"] == "Started x" and data["run_id"] == "run-1"
    assert "color_message" not in data
