"""docs/configuration.md: settings from the environment and `.env`, validated at start-up."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from lookup_knowledge.settings import Settings


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in Settings.model_fields:
        monkeypatch.delenv(name.upper(), raising=False)


def test_defaults_are_the_spec_defaults() -> None:
    s = Settings(_env_file=None)  # type: ignore[call-arg]
    assert s.pyrag_base_url is None and s.redis_url is None and s.pyrag_docs_dir is None
    assert (s.pyrag_timeout_s, s.pyrag_top_k, s.pyrag_mode) == (5, 20, "hybrid")
    assert (s.ledger_ttl_s, s.ledger_pending_ttl_s) == (604800, 60)
    # DATA_DIR ./var, made absolute: the same files as sqlite:///./var/audit.db and ./var/...
    assert s.data_dir == Path("./var").absolute()
    assert (
        s.audit_database_url.get_secret_value() == f"sqlite:///{Path('./var').absolute()}/audit.db"
    )
    assert s.audit_spool_dir == Path("./var/audit-spool").absolute()
    assert (s.max_chunks_per_document, s.return_n) == (2, 5)
    assert (s.precise_threshold, s.reference_threshold) == (0.75, 0.5)
    assert s.pack_char_budget == 4000
    assert (
        s.projection_max_query_chars,
        s.projection_max_evidence,
        s.projection_max_excerpt_chars,
        s.projection_max_bytes,
    ) == (500, 8, 1200, 16384)
    assert (s.host, s.port, s.workers) == ("127.0.0.1", 8080, 1)
    assert s.lookup_tokens == () and s.ledger_tokens == ()


def test_variables_are_read_by_their_spec_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYRAG_BASE_URL", "http://pyrag:8000/")
    monkeypatch.setenv("RETURN_N", "3")
    monkeypatch.setenv("PRECISE_THRESHOLD", "0.8")
    monkeypatch.setenv("LOOKUP_API_TOKENS", " a, b ,,c ")
    s = Settings(_env_file=None)  # type: ignore[call-arg]
    assert s.pyrag_base_url == "http://pyrag:8000"
    assert s.return_n == 3 and s.pipeline_limits.return_n == 3
    assert s.pipeline_limits.precise_threshold == 0.8
    assert s.lookup_tokens == ("a", "b", "c")


def test_a_dotenv_file_is_read_and_the_environment_wins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dotenv = tmp_path / ".env"
    dotenv.write_text("RETURN_N=4\nPACK_CHAR_BUDGET=100\n")
    monkeypatch.setenv("RETURN_N", "6")
    s = Settings(_env_file=dotenv)  # type: ignore[call-arg]
    assert (s.return_n, s.pack_char_budget) == (6, 100)


def test_blank_values_count_as_unset() -> None:
    s = Settings(_env_file=None, pyrag_base_url=" ", redis_url="", pyrag_docs_dir="")  # type: ignore[call-arg]
    assert s.pyrag_base_url is None and s.redis_url is None and s.pyrag_docs_dir is None


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"pyrag_timeout_s": 0}, "greater than 0"),
        ({"pyrag_base_url": "pyrag:8000"}, "PYRAG_BASE_URL"),
        ({"precise_threshold": 0.4}, "REFERENCE_THRESHOLD"),
        ({"reference_threshold": 1.5}, "less than or equal to 1"),
        ({"workers": 2}, "REDIS_URL"),
        ({"projection_max_bytes": 1000}, "PROJECTION_MAX_BYTES"),
        ({"log_level": "loud"}, "LOG_LEVEL"),
        ({"return_n": 0}, "greater than or equal to 1"),
        ({"lookup_api_tokens": "good-token, bad token"}, "b64token"),
        ({"ledger_api_tokens": "t\u00e9st"}, "b64token"),
    ],
)
def test_bad_configuration_fails_fast_with_a_clear_message(
    values: dict[str, object], message: str
) -> None:
    with pytest.raises(ValidationError, match=message):
        Settings(_env_file=None, **values)  # type: ignore[arg-type]


def test_several_workers_are_accepted_with_redis() -> None:
    s = Settings(_env_file=None, workers=3, redis_url="redis://127.0.0.1:6379/0")  # type: ignore[call-arg]
    assert s.workers == 3
