"""The console script as a newcomer meets it: flags, version, banner, log formats, DATA_DIR."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import httpx
import pytest

from lookup_knowledge import __version__
from process import console_script, free_port, running_service

pytestmark = pytest.mark.process


def run_cli(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*console_script(), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", **(env or {})},
    )


def log_of(base: str, cwd: Path) -> str:
    return (cwd / f"service-{base.rsplit(':', 1)[1]}.log").read_text(errors="replace")


@pytest.mark.parametrize("args", [["--version"], ["serve", "--version"]])
def test_the_version_is_printed(tmp_path: Path, args: list[str]) -> None:
    completed = run_cli(*args, cwd=tmp_path)
    assert completed.returncode == 0
    assert completed.stdout.strip().endswith(__version__)


def test_flags_win_over_the_environment(tmp_path: Path) -> None:
    flag_port, env_port = free_port(), free_port()
    with running_service(
        ["serve", "--port", str(flag_port), "--host", "127.0.0.1"],
        cwd=tmp_path,
        env={"PORT": str(env_port), "HOST": "0.0.0.0"},
        port=flag_port,
    ) as base:
        assert httpx.get(f"{base}/healthz", timeout=10).status_code == 200
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"http://127.0.0.1:{env_port}/healthz", timeout=2)
    assert f"on http://127.0.0.1:{flag_port}" in log_of(base, tmp_path)


def test_every_problem_is_one_line_and_the_exit_status_is_2(tmp_path: Path) -> None:
    completed = run_cli(
        "serve",
        cwd=tmp_path,
        env={
            "PYRAG_DOCS_DIR": str(tmp_path / "missing"),
            "AUDIT_DATABASE_URL": "postgres://lk:pw@db/audit",
            "HOST": "no-such-host.invalid",
        },
    )
    assert completed.returncode == 2
    lines = completed.stderr.strip().splitlines()
    assert sorted(line.split(":")[1].strip() for line in lines) == [
        "AUDIT_DATABASE_URL",
        "HOST",
        "PYRAG_DOCS_DIR",
    ]
    assert all(line.startswith("invalid configuration: ") for line in lines)
    assert "Traceback" not in completed.stderr and "pw" not in completed.stderr


def test_a_port_in_use_is_refused_before_the_index_is_built(tmp_path: Path) -> None:
    port = free_port()
    with running_service(["serve"], cwd=tmp_path, env={"PORT": str(port)}, port=port):
        completed = run_cli("serve", cwd=tmp_path, env={"PORT": str(port)})
    assert completed.returncode == 2
    assert completed.stderr.startswith(f"invalid configuration: PORT: {port} is already in use")
    assert "indexed" not in completed.stderr


def test_the_banner_names_the_listen_address_backends_and_data_dir(tmp_path: Path) -> None:
    port = free_port()
    env = {"PORT": str(port), "DATA_DIR": "state", "LOG_FORMAT": "json"}
    with running_service(["serve"], cwd=tmp_path, env=env, port=port) as base:
        httpx.post(
            f"{base}/lookup_knowledge",
            json={"run_id": "r", "tool_call_id": "c", "query": "磁盘满了"},
            timeout=30,
        )
    records = [json.loads(line) for line in log_of(base, tmp_path).splitlines() if line]
    banner = next(r["message"] for r in records if r["message"].startswith("lookup-knowledge "))
    assert f"http://127.0.0.1:{port}" in banner
    assert "embedded engine over the bundled knowledge base" in banner
    assert "in-process" in banner
    assert f"SQLite file {tmp_path / 'state' / 'audit.db'}" in banner
    assert any(r["level"] == "WARNING" and "in process memory" in r["message"] for r in records)
    assert not any(r["logger"].startswith(("httpx", "httpcore")) for r in records)
    assert (tmp_path / "state" / "audit.db").exists()


def test_console_format_writes_readable_lines(tmp_path: Path) -> None:
    port = free_port()
    env = {"PORT": str(port), "LOG_FORMAT": "console"}
    with running_service(["serve"], cwd=tmp_path, env=env, port=port) as base:
        pass
    first = log_of(base, tmp_path).splitlines()[0]
    assert not first.startswith("{")
    assert " INFO    lookup_knowledge: lookup-knowledge " in first


def test_audit_show_reads_the_file_serve_wrote_from_another_folder(tmp_path: Path) -> None:
    port = free_port()
    data = tmp_path / "data"
    (tmp_path / "elsewhere").mkdir()
    env = {"PORT": str(port), "DATA_DIR": str(data)}
    with running_service(["serve"], cwd=tmp_path, env=env, port=port) as base:
        httpx.post(
            f"{base}/lookup_knowledge",
            json={"run_id": "run-d", "tool_call_id": "c1", "query": "redis memory usage high"},
            timeout=30,
        )
    shown = run_cli(
        "audit", "show", "run-d", cwd=tmp_path / "elsewhere", env={"DATA_DIR": str(data)}
    )
    assert shown.returncode == 0, shown.stderr
    assert "c1" in shown.stdout


def test_the_standalone_engine_honours_host_port_and_docs_dir(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "refunds.md").write_text("# Refund failures\n\nCheck the refund ledger job.\n")
    port = free_port()
    env = {"PORT": str(port), "HOST": "127.0.0.1", "PYRAG_DOCS_DIR": str(docs)}
    with running_service(
        ["pyrag", "serve"], cwd=tmp_path, env=env, port=port, ready_path="/api/v1/health"
    ) as engine:
        health = httpx.get(f"{engine}/api/v1/health", timeout=10).json()
    assert health["documents"] == 1
