"""The audit database checked at start: a mistake is a configuration error naming
AUDIT_DATABASE_URL, an outage is not (docs/audit.md#misconfiguration)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from audit_support import UNREACHABLE_MYSQL_URL, mariadb_database, reader
from lookup_knowledge.audit.check import check_audit_database
from lookup_knowledge.preflight import ConfigurationError
from process import console_script


@pytest.fixture
def mariadb() -> Iterator[str]:
    with mariadb_database() as url:
        yield url.render_as_string(hide_password=False)


def problem(url: str) -> str:
    with pytest.raises(ConfigurationError) as raised:
        check_audit_database(url, timeout_s=3)
    [found] = raised.value.problems
    assert found.variable == "AUDIT_DATABASE_URL"
    assert str(raised.value) == found.line()  # one line
    return found.message


def test_a_reachable_database_with_a_usable_table_passes_and_gets_the_table(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path}/audit.db"

    assert check_audit_database(url) is None

    with reader(url) as engine, engine.connect() as conn:
        assert conn.execute(text("SELECT COUNT(*) FROM tool_invocation")).scalar() == 0


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("postgres://u:p@db:5432/audit", "unsupported database 'postgres'"),
        ("not a url", "not a database URL"),
        ("mysql://root@127.0.0.1/audit", "no driver for 'mysql'"),
    ],
)
def test_a_url_the_service_cannot_use_is_a_configuration_error(url: str, says: str) -> None:
    assert says in problem(url)


def test_a_sqlite_path_that_cannot_be_created_is_a_configuration_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a folder")

    assert "cannot create the folder" in problem(f"sqlite:///{tmp_path}/file/audit.db")


@pytest.mark.mysql
def test_a_misspelled_database_name_is_a_configuration_error_not_an_outage() -> None:
    said = problem("mysql+pymysql://root@127.0.0.1:3306/lk_test_audit_typo_not_there")

    assert "Unknown database 'lk_test_audit_typo_not_there'" in said


@pytest.mark.mysql
def test_wrong_credentials_are_a_configuration_error_and_the_password_is_not_shown() -> None:
    said = problem("mysql+pymysql://lk_no_such_user:s3cret@127.0.0.1:3306/mysql")

    assert "Access denied" in said
    assert "s3cret" not in said


@pytest.mark.mysql
@pytest.mark.parametrize(
    ("ddl", "says"),
    [
        ("query INT NOT NULL", "column query is INTEGER"),
        ("run_id VARCHAR(16) NOT NULL", "column run_id holds 16 characters, rows need 128"),
        ("tenant VARCHAR(32) NOT NULL", "column tenant is NOT NULL without a default"),
    ],
)
def test_a_table_the_rows_cannot_go_into_is_a_configuration_error(
    mariadb: str, ddl: str, says: str
) -> None:
    with reader(mariadb) as engine, engine.begin() as conn:
        conn.execute(
            text(f"CREATE TABLE tool_invocation (id BIGINT PRIMARY KEY AUTO_INCREMENT, {ddl})")
        )

    assert says in problem(mariadb)


def test_an_unreachable_database_is_an_outage_with_its_reason_not_an_error() -> None:
    reason = check_audit_database(UNREACHABLE_MYSQL_URL, timeout_s=3)

    assert reason is not None and "Can't connect" in reason


@pytest.mark.process
@pytest.mark.mysql
def test_serve_with_a_misspelled_database_exits_2_with_one_line_and_no_traceback(
    tmp_path: Path,
) -> None:
    completed = subprocess.run(
        [*console_script(), "serve"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env={
            "PATH": "/usr/bin:/bin",
            "AUDIT_DATABASE_URL": "mysql+pymysql://root@127.0.0.1:3306/lk_test_audit_typo",
        },
    )

    assert completed.returncode == 2
    [named] = [line for line in completed.stderr.splitlines() if "AUDIT_DATABASE_URL" in line]
    assert named.startswith("invalid configuration: AUDIT_DATABASE_URL: Unknown database")
    assert "lk_test_audit_typo" in named
    assert "Traceback" not in completed.stderr
