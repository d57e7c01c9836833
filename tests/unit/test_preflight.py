"""docs/configuration.md#start-up-checks: one line per problem, naming the variable.

Every variable of the configuration table has a bad value here, and a test fails when a row
is added to the table without one.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from lookup_knowledge import preflight
from lookup_knowledge.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
CONFIG_DOC = ROOT / "docs" / "configuration.md"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in Settings.model_fields:
        monkeypatch.delenv(name.upper(), raising=False)
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    monkeypatch.chdir(tmp_path)  # no stray .env, and ./var lands in the test's folder


@pytest.fixture
def a_file(tmp_path: Path) -> Path:
    path = tmp_path / "a-file"
    path.write_text("not a folder")
    return path


@pytest.fixture
def busy_port() -> Iterator[int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def problems_for(environment: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The lines `serve` would print for this environment (no bind unless HOST/PORT set)."""
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    bind = "HOST" in environment or "PORT" in environment
    try:
        preflight.load_settings(bind=bind, _env_file=None)
    except preflight.ConfigurationError as exc:
        return [problem.line() for problem in exc.problems]
    return []


# variable → an environment in which that variable's value is what is wrong.
BAD_VALUES: dict[str, dict[str, str]] = {
    "PYRAG_BASE_URL": {"PYRAG_BASE_URL": "pyrag:8000"},
    "PYRAG_TIMEOUT_S": {"PYRAG_TIMEOUT_S": "0"},
    "PYRAG_CONNECT_TIMEOUT_S": {"PYRAG_CONNECT_TIMEOUT_S": "0"},
    "PYRAG_POOL_TIMEOUT_S": {"PYRAG_POOL_TIMEOUT_S": "-1"},
    "PYRAG_TOP_K": {"PYRAG_TOP_K": "many"},
    "PYRAG_MODE": {"PYRAG_MODE": "x" * 33},
    "PYRAG_HTTP_TRANSPORT": {"PYRAG_HTTP_TRANSPORT": "curl"},
    "PYRAG_DOCS_DIR": {"PYRAG_DOCS_DIR": "/nonexistent/docs"},
    "PYRAG_INDEX_CACHE": {"PYRAG_INDEX_CACHE": "sometimes"},
    "PYRAG_MAX_BODY_BYTES": {"PYRAG_MAX_BODY_BYTES": "100"},
    "REDIS_URL": {"REDIS_URL": "http://redis:6379"},
    "REDIS_CLUSTER": {"REDIS_CLUSTER": "perhaps"},
    "LEDGER_TTL_S": {"LEDGER_TTL_S": "0"},
    "LEDGER_PENDING_TTL_S": {"LEDGER_PENDING_TTL_S": "-5"},
    "REDIS_CONNECT_TIMEOUT_S": {"REDIS_CONNECT_TIMEOUT_S": "0"},
    "REDIS_SOCKET_TIMEOUT_S": {"REDIS_SOCKET_TIMEOUT_S": "fast"},
    "REDIS_POOL_TIMEOUT_S": {"REDIS_POOL_TIMEOUT_S": "61"},
    "AUDIT_DATABASE_URL": {"AUDIT_DATABASE_URL": "postgres://lk:secret@db/audit"},
    "AUDIT_SPOOL_DIR": {"AUDIT_SPOOL_DIR": "{a_file}/spool"},
    "AUDIT_SPOOL_FSYNC_MS": {"AUDIT_SPOOL_FSYNC_MS": "0"},
    "AUDIT_DB_TIMEOUT_S": {"AUDIT_DB_TIMEOUT_S": "-1"},
    "AUDIT_WRITER_STUCK_S": {"AUDIT_WRITER_STUCK_S": "soon"},
    "AUDIT_DETAILS_MAX_BYTES": {"AUDIT_DETAILS_MAX_BYTES": "10"},
    "AUDIT_DETAILS_MAX_DEPTH": {"AUDIT_DETAILS_MAX_DEPTH": "32"},  # MariaDB refuses 32 deep
    "AUDIT_THREAD_NICE": {"AUDIT_THREAD_NICE": "20"},  # nice stops at 19
    "DATA_DIR": {"DATA_DIR": "{a_file}"},
    "LOOKUP_API_TOKENS": {"LOOKUP_API_TOKENS": " , ,"},
    "LEDGER_API_TOKENS": {"LEDGER_API_TOKENS": ","},
    "MAX_CHUNKS_PER_DOCUMENT": {"MAX_CHUNKS_PER_DOCUMENT": "0"},
    "RETURN_N": {"RETURN_N": "two"},
    "PRECISE_THRESHOLD": {"PRECISE_THRESHOLD": "1.5"},
    "REFERENCE_THRESHOLD": {"REFERENCE_THRESHOLD": "0.9"},  # above PRECISE_THRESHOLD
    "PACK_CHAR_BUDGET": {"PACK_CHAR_BUDGET": "0"},
    "PROJECTION_MAX_QUERY_CHARS": {"PROJECTION_MAX_QUERY_CHARS": "0"},
    "PROJECTION_MAX_EVIDENCE": {"PROJECTION_MAX_EVIDENCE": "-1"},
    "PROJECTION_MAX_EXCERPT_CHARS": {"PROJECTION_MAX_EXCERPT_CHARS": "0"},
    "PROJECTION_MAX_BYTES": {"PROJECTION_MAX_BYTES": "1000"},
    "MAX_QUERY_CHARS": {"MAX_QUERY_CHARS": "0"},
    "MCP_RUN_ID": {"MCP_RUN_ID": "run 42"},  # outside the id charset
    "MAX_CONCURRENT_LOOKUPS": {"MAX_CONCURRENT_LOOKUPS": "0"},
    "LOOKUP_QUEUE_MAX": {"LOOKUP_QUEUE_MAX": "-1"},
    "LOOKUP_QUEUE_TIMEOUT_S": {"LOOKUP_QUEUE_TIMEOUT_S": "61"},
    "HTTP_HEADER_TIMEOUT_S": {"HTTP_HEADER_TIMEOUT_S": "0"},
    "HTTP_KEEPALIVE_TIMEOUT_S": {"HTTP_KEEPALIVE_TIMEOUT_S": "0.5"},  # whole seconds
    "HTTP_BODY_TIMEOUT_S": {"HTTP_BODY_TIMEOUT_S": "never"},
    "HTTP_MAX_CONNECTIONS": {"HTTP_MAX_CONNECTIONS": "0"},
    "HOST": {"HOST": "no-such-host.invalid", "PORT": "0"},
    "PORT": {"PORT": "{busy_port}"},
    "WORKERS": {"WORKERS": "2"},  # without REDIS_URL
    "LOG_LEVEL": {"LOG_LEVEL": "loud"},
    "LOG_FORMAT": {"LOG_FORMAT": "xml"},
    "PROMETHEUS_MULTIPROC_DIR": {"PROMETHEUS_MULTIPROC_DIR": "/nonexistent/metrics"},
}


def documented_variables() -> list[str]:
    rows = re.findall(r"^\| `([A-Z][A-Z0-9_]+)` \|", CONFIG_DOC.read_text(), flags=re.MULTILINE)
    return list(dict.fromkeys(rows))


def test_every_row_of_the_configuration_table_has_a_bad_value_case() -> None:
    documented = documented_variables()
    assert len(documented) >= 25
    assert sorted(set(documented) - set(BAD_VALUES)) == []
    assert sorted(set(BAD_VALUES) - set(documented)) == []


@pytest.mark.parametrize("variable", sorted(BAD_VALUES))
def test_a_bad_value_gets_one_line_naming_its_variable(
    variable: str,
    monkeypatch: pytest.MonkeyPatch,
    a_file: Path,
    busy_port: int,
) -> None:
    environment = {
        name: value.format(a_file=a_file, busy_port=busy_port)
        for name, value in BAD_VALUES[variable].items()
    }
    lines = problems_for(environment, monkeypatch)
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"invalid configuration: {variable}: ")
    assert "\n" not in lines[0]


def test_nothing_set_has_no_problem(monkeypatch: pytest.MonkeyPatch) -> None:
    assert problems_for({}, monkeypatch) == []


def test_every_problem_is_reported_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    lines = problems_for(
        {"PORT": "70000", "RETURN_N": "0", "REDIS_URL": "http://x", "LOG_LEVEL": "loud"},
        monkeypatch,
    )
    named = sorted(line.split(":")[1].strip() for line in lines)
    assert named == ["LOG_LEVEL", "PORT", "REDIS_URL", "RETURN_N"]


def test_secrets_are_never_printed(monkeypatch: pytest.MonkeyPatch) -> None:
    lines = problems_for(
        {"AUDIT_DATABASE_URL": "postgres://lk:hunter2@db/audit", "REDIS_URL": "http://:pw9@r"},
        monkeypatch,
    )
    assert len(lines) == 2
    assert not any("hunter2" in line or "pw9" in line for line in lines)


def test_docs_dir_set_together_with_a_remote_pyrag_is_refused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "kb.md").write_text("# A runbook\n\ntext")
    lines = problems_for(
        {"PYRAG_DOCS_DIR": str(tmp_path), "PYRAG_BASE_URL": "http://pyrag:8090"}, monkeypatch
    )
    assert len(lines) == 1 and "PYRAG_BASE_URL" in lines[0]


def test_a_docs_dir_without_markdown_is_refused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "notes.txt").write_text("not markdown")
    lines = problems_for({"PYRAG_DOCS_DIR": str(tmp_path / "docs")}, monkeypatch)
    assert lines == [
        f"invalid configuration: PYRAG_DOCS_DIR: {tmp_path / 'docs'} holds no Markdown (*.md) files"
    ]


def test_data_dir_roots_the_audit_files_as_an_absolute_path(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("DATA_DIR", "state")
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    assert settings.data_dir == tmp_path / "state"
    assert settings.audit_database_url.get_secret_value() == f"sqlite:///{tmp_path}/state/audit.db"
    assert settings.audit_spool_dir == tmp_path / "state" / "audit-spool"


def test_explicit_audit_paths_win_over_data_dir(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("DATA_DIR", "state")
    monkeypatch.setenv("AUDIT_SPOOL_DIR", "/srv/spool")
    monkeypatch.setenv("AUDIT_DATABASE_URL", "mysql+pymysql://lk@db/audit")
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    assert settings.audit_spool_dir == Path("/srv/spool")
    assert settings.audit_database_url.get_secret_value() == "mysql+pymysql://lk@db/audit"


def test_a_masked_url_hides_only_the_password() -> None:
    assert (
        preflight.masked_url("mysql+pymysql://lk:s3cret@db:3306/audit")
        == "mysql+pymysql://lk:***@db:3306/audit"
    )
    assert preflight.masked_url("redis://redis:6379/0") == "redis://redis:6379/0"
