"""What the guard's two commands share: the service address, the token, reading input."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import httpx

URL_ENV = "LOOKUP_KNOWLEDGE_URL"  # the service base URL, when --url is not given
TOKEN_ENV = "LOOKUP_KNOWLEDGE_TOKEN"  # a bearer token of the ledger role, when --token is not
DEFAULT_URL = "http://127.0.0.1:8080"


class CliError(Exception):
    """Input, network or HTTP trouble: exit 2 with the message on stderr."""


def token_from(flag: str | None) -> str | None:
    """The --token value, else the environment's; never printed."""
    return flag or os.environ.get(TOKEN_ENV) or None


def auth_headers(token: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token else {}


def read_input(path: str) -> bytes:
    """A file's bytes; '-' reads stdin."""
    try:
        return sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc}") from exc


def get(url: str, *, token: str | None, timeout_s: float) -> httpx.Response:
    try:
        return httpx.get(url, headers=auth_headers(token), timeout=timeout_s)
    except httpx.HTTPError as exc:
        raise CliError(f"cannot fetch {url}: {type(exc).__name__}: {exc}") from exc


def post_json(url: str, body: bytes, *, token: str | None, timeout_s: float) -> httpx.Response:
    headers = {"Content-Type": "application/json", **auth_headers(token)}
    try:
        return httpx.post(url, content=body, headers=headers, timeout=timeout_s)
    except httpx.HTTPError as exc:
        raise CliError(f"cannot reach {url}: {type(exc).__name__}: {exc}") from exc


__all__ = [
    "DEFAULT_URL",
    "TOKEN_ENV",
    "URL_ENV",
    "CliError",
    "auth_headers",
    "get",
    "post_json",
    "read_input",
    "token_from",
]
