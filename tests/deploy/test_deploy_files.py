"""Dockerfile, docker-compose.yml and .env.example, validated without a Docker engine."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from lookup_knowledge.cli import build_parser
from lookup_knowledge.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
SETTING_NAMES = {name.upper() for name in Settings.model_fields}


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    return data


# What an operator puts in .env for the stack; everything else stays at its compose default.
OPERATOR_ENV = {"MYSQL_PASSWORD": "s3cret-app", "MYSQL_ROOT_PASSWORD": "s3cret-root"}
_VARIABLE = re.compile(r"\$\{([A-Z_]+)(?::([-?])([^}]*))?\}")


def _interpolate(value: str, environment: dict[str, str] = OPERATOR_ENV) -> str:
    """Compose's `${VAR}`, `${VAR:-default}` and `${VAR:?error}` (which refuses to start)."""

    def replace(match: re.Match[str]) -> str:
        name, kind, rest = match.groups()
        if environment.get(name):
            return environment[name]
        if kind == "?":
            raise LookupError(f"compose refuses to start: {name}: {rest}")
        return rest if kind == "-" else ""

    return _VARIABLE.sub(replace, value.replace("$$", "\0")).replace("\0", "$")


def _env(service: dict[str, Any]) -> dict[str, str]:
    return {k: _interpolate(str(v)) for k, v in (service.get("environment") or {}).items()}


def test_the_stack_has_the_service_its_engine_redis_and_mysql(compose: dict[str, Any]) -> None:
    assert set(compose["services"]) == {"lookup-knowledge", "pyrag", "redis", "mysql"}


def test_the_service_waits_for_healthy_dependencies(compose: dict[str, Any]) -> None:
    depends = compose["services"]["lookup-knowledge"]["depends_on"]
    assert depends == {
        name: {"condition": "service_healthy"} for name in ("pyrag", "redis", "mysql")
    }
    for name in ("pyrag", "redis", "mysql"):
        assert compose["services"][name]["healthcheck"]["test"][0] == "CMD"


def test_every_variable_set_for_the_service_is_one_it_reads_and_validates(
    compose: dict[str, Any],
) -> None:
    env = _env(compose["services"]["lookup-knowledge"])
    assert set(env) <= SETTING_NAMES, set(env) - SETTING_NAMES
    settings = Settings(_env_file=None, **{k.lower(): v for k, v in env.items()})
    assert settings.redis_url is not None and settings.pyrag_base_url is not None


def test_every_variable_the_service_reads_is_set_or_defaulted(compose: dict[str, Any]) -> None:
    env = _env(compose["services"]["lookup-knowledge"])
    for name, field in Settings.model_fields.items():
        assert name.upper() in env or not field.is_required(), name


def test_urls_point_at_the_compose_services_and_their_ports(compose: dict[str, Any]) -> None:
    services = compose["services"]
    env = _env(services["lookup-knowledge"])
    pyrag = urlsplit(env["PYRAG_BASE_URL"])
    pyrag_command = services["pyrag"]["command"]
    assert pyrag.hostname == "pyrag"
    assert str(pyrag.port) == pyrag_command[pyrag_command.index("--port") + 1]
    assert urlsplit(env["REDIS_URL"]).hostname == "redis"
    audit = urlsplit(env["AUDIT_DATABASE_URL"])
    mysql_env = _env(services["mysql"])
    assert (audit.scheme, audit.hostname, audit.port) == ("mysql+pymysql", "mysql", 3306)
    assert audit.path.lstrip("/") == mysql_env["MYSQL_DATABASE"]
    assert (audit.username, audit.password) == (
        mysql_env["MYSQL_USER"],
        mysql_env["MYSQL_PASSWORD"],
    )


def test_state_lives_on_named_volumes(compose: dict[str, Any]) -> None:
    services = compose["services"]
    spool = _env(services["lookup-knowledge"])["AUDIT_SPOOL_DIR"]
    mounts = {m.split(":")[1]: m.split(":")[0] for m in services["lookup-knowledge"]["volumes"]}
    assert mounts[spool] in compose["volumes"]
    assert any(m.endswith(":/var/lib/mysql") for m in services["mysql"]["volumes"])


def test_images_are_pinned_and_commands_are_real_cli_commands(compose: dict[str, Any]) -> None:
    parser = build_parser()
    for name, service in compose["services"].items():
        image = service["image"]
        assert ":" in image and not image.endswith(":latest"), name
        command = service.get("command")
        if command and command[0] == "lookup-knowledge":
            args = parser.parse_args(
                command[1:]
            )  # raises SystemExit if the CLI has no such command
            assert args.handler.__name__ == "pyrag_serve"


def test_compose_refuses_to_start_without_database_passwords(compose: dict[str, Any]) -> None:
    services = compose["services"]
    for service in ("lookup-knowledge", "mysql"):
        with pytest.raises(LookupError, match="MYSQL_PASSWORD"):
            {k: _interpolate(str(v), {}) for k, v in services[service]["environment"].items()}
    assert _env(services["mysql"])["MYSQL_ROOT_PASSWORD"] == "s3cret-root"
    text = (ROOT / "docker-compose.yml").read_text()
    assert not re.search(r"PASSWORD:-", text), "no password may fall back to a default"


def test_the_dockerfile_installs_the_locked_dependencies_before_the_source() -> None:
    text = (ROOT / "Dockerfile").read_text()
    build = text[: text.rindex("\nFROM ")]
    lock, source = build.index("COPY requirements.lock"), build.index("COPY src")
    assert lock < build.index("-r requirements.lock") < source
    runtime = text[text.rindex("\nFROM ") :]
    assert runtime.index("-r /tmp/requirements.lock") < runtime.index("/wheels/app")


def test_the_dockerfile_is_multi_stage_slim_non_root_with_a_healthcheck() -> None:
    text = (ROOT / "Dockerfile").read_text()
    stages = re.findall(r"^FROM (\S+)", text, flags=re.M)
    assert len(stages) >= 2 and all(s.startswith("python:3.11-slim") for s in stages)
    runtime = text[text.rindex("\nFROM ") :]
    assert re.search(r"^USER (?!root)\w+", runtime, flags=re.M)
    assert "HOST=0.0.0.0" in runtime
    assert re.search(r"^HEALTHCHECK .*\n?.*/healthz", runtime, flags=re.M)
    cmd = re.search(r"^CMD \[(.*)\]", runtime, flags=re.M)
    assert cmd is not None
    assert [part.strip().strip('"') for part in cmd.group(1).split(",")] == [
        "lookup-knowledge",
        "serve",
    ]
    for source in re.findall(r"^COPY (?!--from)(.+) \S+$", text, flags=re.M):
        for path in shlex.split(source):
            assert (ROOT / path).exists(), path


def test_the_env_example_lists_every_variable_and_validates(tmp_path: Path) -> None:
    example = ROOT / ".env.example"
    names = {
        line.split("=", 1)[0]
        for line in example.read_text().splitlines()
        if line and not line.startswith("#")
    }
    assert names == SETTING_NAMES
    settings = Settings(_env_file=example)  # type: ignore[call-arg]
    assert settings == Settings(_env_file=None)  # type: ignore[call-arg]
