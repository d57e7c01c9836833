"""Start-up checks: every configuration problem, one line each, before anything is built.

Types, ranges, URL schemes and rules between settings are checked by `Settings` itself; what
needs the machine is checked here: the docs folder, the audit database's file or name, local
folders that must be writable, and whether HOST:PORT can be bound. `lookup-knowledge serve`
prints each problem on its own line, naming the variable, and exits with status 2
(docs/configuration.md#start-up-checks).
"""

from __future__ import annotations

import errno
import os
import re
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import SecretStr, ValidationError
from sqlalchemy import make_url

from lookup_knowledge.settings import Settings

EXIT_CONFIGURATION = 2
SETTING_NAMES = frozenset(name.upper() for name in Settings.model_fields)
_NAME = re.compile(r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b|\bHOST\b|\bPORT\b|\bWORKERS\b")
_SECRET_FIELDS = frozenset(
    name for name, field in Settings.model_fields.items() if "SecretStr" in repr(field.annotation)
)
_MARKDOWN_SUFFIXES = (".md", ".markdown")


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with the configuration, attributed to one variable."""

    variable: str
    message: str

    def line(self) -> str:
        return f"invalid configuration: {self.variable}: {self.message}"


class ConfigurationError(Exception):
    """The configuration cannot work; `problems` says why, one variable at a time."""

    def __init__(self, problems: Iterable[Problem]) -> None:
        self.problems = tuple(problems)
        super().__init__("\n".join(problem.line() for problem in self.problems))


def load_settings(*, bind: bool = True, **overrides: Any) -> Settings:
    """Settings from the environment and `.env` (overrides win) that pass every check.

    Raises ConfigurationError listing every problem at once: when some values are invalid,
    the machine checks still run on the others (the invalid ones stand in at their defaults).
    """
    try:
        settings = Settings(**overrides)
    except ValidationError as exc:
        problems = validation_problems(exc)
        stand_in = _with_defaults_for(exc, overrides)
        if stand_in is not None:
            reported = {problem.variable for problem in problems}
            problems += [p for p in check(stand_in, bind=bind) if p.variable not in reported]
        raise ConfigurationError(problems) from None
    problems = check(settings, bind=bind)
    if problems:
        raise ConfigurationError(problems)
    return settings


def _with_defaults_for(exc: ValidationError, overrides: dict[str, Any]) -> Settings | None:
    """The settings with every invalid field at its default; None if that is still invalid."""
    fields = {str(error["loc"][0]) for error in exc.errors() if error["loc"]}
    defaults = {name: Settings.model_fields[name].get_default() for name in fields}
    try:
        return Settings(**{**overrides, **defaults})
    except ValidationError:
        return None


def validation_problems(exc: ValidationError) -> list[Problem]:
    """pydantic's errors as Problems, the value shown unless the setting is a secret."""
    problems: list[Problem] = []
    for error in exc.errors(include_url=False):
        field = str(error["loc"][0]) if error["loc"] else ""
        message = str(error["msg"]).removeprefix("Value error, ")
        if field:
            variable = field.upper()
            message = message.removeprefix(f"{variable} ")
            if field not in _SECRET_FIELDS:  # a secret's value is never printed
                message += f" (got {error.get('input')!r})"
            problems.append(Problem(variable, message))
        else:  # a rule between settings: its message names them
            named = [n for n in _NAME.findall(message) if n in SETTING_NAMES]
            problems.append(Problem(named[0] if named else "settings", message))
    return problems


def check(settings: Settings, *, bind: bool = True) -> list[Problem]:
    """What the machine says about these settings; `bind` also tries HOST:PORT."""
    data_dir = _writable_dir("DATA_DIR", settings.data_dir)
    problems = [
        *_docs_dir(settings),
        *data_dir,
        *_metrics_dir(os.environ.get("PROMETHEUS_MULTIPROC_DIR", "")),
    ]
    # A path derived from a broken DATA_DIR is that one problem, not three.
    if not (data_dir and settings.audit_spool_dir.is_relative_to(settings.data_dir)):
        problems.extend(_writable_dir("AUDIT_SPOOL_DIR", settings.audit_spool_dir))
    audit = _audit_url(settings.audit_database_url)
    if not (data_dir and str(settings.data_dir) in settings.audit_database_url.get_secret_value()):
        problems.extend(audit)
    if bind:
        problems.extend(_bindable(settings.host, settings.port))
    return problems


def _docs_dir(settings: Settings) -> list[Problem]:
    docs = settings.pyrag_docs_dir
    if docs is None:
        return []
    if settings.pyrag_base_url is not None:
        return [
            Problem(
                "PYRAG_DOCS_DIR",
                "is read only by the embedded engine, but PYRAG_BASE_URL is set too; "
                "unset one of them",
            )
        ]
    if not docs.is_dir():
        return [Problem("PYRAG_DOCS_DIR", f"{docs} does not exist or is not a folder")]
    if not any(_markdown_files(docs)):
        return [Problem("PYRAG_DOCS_DIR", f"{docs} holds no Markdown (*.md) files")]
    return []


def _markdown_files(folder: Path) -> Iterable[Path]:
    for root, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in files:
            if name.lower().endswith(_MARKDOWN_SUFFIXES) and not name.startswith("."):
                yield Path(root, name)


def _audit_url(secret: SecretStr) -> list[Problem]:
    """A SQLite file must be creatable, a MySQL URL must name its database."""
    url = make_url(secret.get_secret_value())
    if url.get_backend_name() == "sqlite":
        if not url.database or url.database == ":memory:":
            return [Problem("AUDIT_DATABASE_URL", "an in-memory SQLite database loses every row")]
        return _writable_dir("AUDIT_DATABASE_URL", Path(url.database).parent)
    if not url.database:
        return [Problem("AUDIT_DATABASE_URL", "names no database (mysql+pymysql://.../<database>)")]
    return []


def _metrics_dir(value: str) -> list[Problem]:
    """prometheus-client needs an existing, writable folder when this is set."""
    if not value.strip():
        return []
    folder = Path(value)
    if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
        return [Problem("PROMETHEUS_MULTIPROC_DIR", f"{folder} is not an existing writable folder")]
    return []


def _writable_dir(variable: str, folder: Path) -> list[Problem]:
    """The folder exists and is writable, or can be created (nothing is created here)."""
    path = folder.absolute()
    while not path.exists():
        if path.parent == path:
            break
        path = path.parent
    if not path.is_dir():
        return [Problem(variable, f"{folder} cannot be created: {path} is not a folder")]
    if not os.access(path, os.W_OK | os.X_OK):
        return [Problem(variable, f"{folder} is not writable (no write access to {path})")]
    return []


def _bindable(host: str, port: int) -> list[Problem]:
    """Whether HOST resolves and HOST:PORT is free to listen on (the socket is closed again)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (socket.gaierror, UnicodeError) as exc:
        return [Problem("HOST", f"{host!r} is not an address of this machine ({exc})")]
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(address)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return [Problem("PORT", f"{port} is already in use on {host}")]
            if exc.errno in (errno.EACCES, errno.EPERM):
                return [Problem("PORT", f"{port} needs privileges this process lacks")]
            return [Problem("HOST", f"cannot listen on {host}:{port} ({exc.strerror})")]
    return []


def masked_url(url: str) -> str:
    """A URL safe to print: any password replaced by ***."""
    return re.sub(r"(://[^:/@]*:)[^@/]*@", r"\1***@", url)
