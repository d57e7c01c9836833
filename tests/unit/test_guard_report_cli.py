"""`lookup-knowledge verify-report`: what it sends, prints and exits with (service mocked)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx

from lookup_knowledge.cli import main as cli_main
from lookup_knowledge.guard.report_cli import main

URL = "http://guard.test"
REPORT = {"analyses": [], "limitations": ["Nothing was looked up."]}
OK = {"ok": True, "violations": [], "evidence_snapshot": []}
REFUSED = {
    "ok": False,
    "violations": [
        {"code": "NOT_FOUND", "path": "$.analyses[0].citations[0].tool_call_id", "message": "m1"},
        {"code": "LIMITATIONS_MISSING", "path": "$.limitations", "message": "m2"},
    ],
    "evidence_snapshot": [],
}


@pytest.fixture
def report_file(tmp_path: Path) -> Path:
    path = tmp_path / "report.json"
    path.write_text(json.dumps(REPORT), encoding="utf-8")
    return path


@pytest.fixture(autouse=True)
def environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOOKUP_KNOWLEDGE_URL", URL)
    monkeypatch.setenv("LOOKUP_KNOWLEDGE_TOKEN", "guard-secret")


def answer(status: int, body: dict[str, Any]) -> respx.Route:
    return respx.post(f"{URL}/guard/verify").mock(return_value=httpx.Response(status, json=body))


@respx.mock
def test_it_sends_the_report_with_its_run_and_the_token_from_the_environment(
    report_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    route = answer(200, OK)

    assert main([str(report_file), "--run", "run-42"]) == 0

    sent = route.calls.last.request
    assert sent.headers["Authorization"] == "Bearer guard-secret"
    assert json.loads(sent.content) == {"run_id": "run-42", "report": REPORT}
    assert capsys.readouterr().out == "OK (0 cited evidence items)\n"


@respx.mock
def test_it_prints_each_violation_with_its_path_and_exits_one(
    report_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    answer(200, REFUSED)

    assert main([str(report_file), "--run", "run-42"]) == 1
    assert capsys.readouterr().out.splitlines() == [
        "NOT_FOUND at $.analyses[0].citations[0].tool_call_id: m1",
        "LIMITATIONS_MISSING at $.limitations: m2",
    ]


@respx.mock
def test_with_json_it_prints_the_services_answer(
    report_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    answer(200, REFUSED)

    assert main([str(report_file), "--run", "run-42", "--json"]) == 1
    assert json.loads(capsys.readouterr().out) == REFUSED


@respx.mock
def test_url_flag_wins_over_the_environment_and_stdin_is_read_for_a_dash(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    route = respx.post("http://other.test/guard/verify").mock(
        return_value=httpx.Response(200, json=OK)
    )
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(json.dumps(REPORT).encode())))

    assert main(["-", "--run", "run-42", "--url", "http://other.test/"]) == 0
    assert route.called


@respx.mock
def test_without_a_token_in_the_environment_it_sends_none(
    report_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LOOKUP_KNOWLEDGE_TOKEN")
    route = answer(200, OK)

    assert main([str(report_file), "--run", "run-42"]) == 0
    assert "Authorization" not in route.calls.last.request.headers


@respx.mock
@pytest.mark.parametrize(
    ("status", "code"),
    [(401, "UNAUTHORIZED"), (403, "FORBIDDEN"), (413, "PAYLOAD_TOO_LARGE"), (503, "X")],
)
def test_an_error_answer_exits_two_with_its_code_on_stderr(
    report_file: Path, capsys: pytest.CaptureFixture[str], status: int, code: str
) -> None:
    answer(status, {"error": {"code": code, "message": "no", "details": None}})

    assert main([str(report_file), "--run", "run-42"]) == 2
    assert capsys.readouterr().err.startswith(f"error: HTTP {status} {code}: no")


@respx.mock
def test_an_unreachable_service_exits_two(
    report_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    respx.post(f"{URL}/guard/verify").mock(side_effect=httpx.ConnectError("refused"))

    assert main([str(report_file), "--run", "run-42"]) == 2
    assert capsys.readouterr().err.startswith("error: cannot reach")


@pytest.mark.parametrize(
    "content", [b"{not json", b"[1, 2]", b"\xff"], ids=["not json", "not an object", "not utf-8"]
)
def test_a_file_that_is_not_a_json_object_exits_two_without_a_request(
    tmp_path: Path, content: bytes
) -> None:
    path = tmp_path / "report.json"
    path.write_bytes(content)

    with respx.mock(assert_all_called=False) as mock:
        route = mock.post(f"{URL}/guard/verify")
        assert main([str(path), "--run", "run-42"]) == 2
    assert not route.called


@pytest.mark.parametrize(
    "argv",
    [[], ["report.json"], ["report.json", "--run", "run 42"], ["missing.json", "--run", "r"]],
    ids=["nothing", "no run", "bad run id", "missing file"],
)
def test_usage_and_input_errors_exit_two(argv: list[str], tmp_path: Path) -> None:
    (tmp_path / "report.json").write_text("{}")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(tmp_path)
        assert main(argv) == 2


@respx.mock
def test_the_console_entry_delegates_verify_report(report_file: Path) -> None:
    answer(200, OK)

    assert cli_main(["verify-report", str(report_file), "--run", "run-42"]) == 0
