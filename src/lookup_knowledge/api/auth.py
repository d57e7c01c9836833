"""Bearer-token auth with two roles: `lookup` for agents, `ledger` for EvidenceGuard.

See docs/http-api.md#auth.

A role whose token list is unset is open (the app warns at start-up). A valid token of the
other role is 403, anything else 401. Every configured token is compared in constant time,
all of them every time, so timing tells nothing about which one nearly matched.
"""

from __future__ import annotations

import hmac
import re
from enum import StrEnum

from fastapi import Depends, Request, Security
from fastapi.params import Depends as DependsParam
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from lookup_knowledge.api.deps import SettingsDep
from lookup_knowledge.domain.errors import Forbidden, Unauthorized
from lookup_knowledge.settings import B64TOKEN, Settings

# RFC 6750 section 2.1: credentials = "Bearer" 1*SP b64token; the scheme is case-insensitive.
_BEARER = re.compile(r"(?i:bearer) +(" + B64TOKEN + ")")


class Role(StrEnum):
    LOOKUP = "lookup"
    LEDGER = "ledger"


# The bearer schemes /openapi.json declares, one per role. They document; `bearer_token` parses.
SECURITY_SCHEMES = {
    Role.LOOKUP: HTTPBearer(
        scheme_name="lookupToken",
        description="One of LOOKUP_API_TOKENS (agent runtimes)",
        auto_error=False,
    ),
    Role.LEDGER: HTTPBearer(
        scheme_name="ledgerToken",
        description="One of LEDGER_API_TOKENS (EvidenceGuard)",
        auto_error=False,
    ),
}


def tokens_for(settings: Settings, role: Role) -> tuple[str, ...]:
    return settings.lookup_tokens if role is Role.LOOKUP else settings.ledger_tokens


def token_matches(presented: str, tokens: tuple[str, ...]) -> bool:
    """Whether `presented` is one of `tokens`; compares with every one, in constant time."""
    given = presented.encode()
    found = False
    for token in tokens:
        found |= hmac.compare_digest(given, token.encode())
    return found


def bearer_token(request: Request) -> str | None:
    """The token of `Authorization: Bearer <token>` as RFC 6750 writes it, else None.

    Only SP and HTAB are whitespace (around the value; only SP after the scheme), and the
    token is a b64token: `Bearer <token>\xa0` is not that token.
    """
    return _bearer(request.headers.get("authorization", ""))


def bearer_token_from(headers: list[tuple[bytes, bytes]]) -> str | None:
    """`bearer_token` of an ASGI scope's raw headers (the first Authorization, as there)."""
    for name, value in headers:
        if name == b"authorization":
            return _bearer(value.decode("latin-1"))
    return None


def _bearer(value: str) -> str | None:
    match = _BEARER.fullmatch(value.strip(" \t"))
    return match.group(1) if match else None


def authorize(settings: Settings, role: Role, presented: str | None) -> None:
    """Raise Unauthorized / Forbidden unless `presented` is a token of `role` (or it is open)."""
    allowed = tokens_for(settings, role)
    if not allowed:
        return
    if presented is None:
        raise Unauthorized(f"a bearer token of the {role} role is required")
    if token_matches(presented, allowed):
        return
    other = Role.LEDGER if role is Role.LOOKUP else Role.LOOKUP
    if token_matches(presented, tokens_for(settings, other)):
        raise Forbidden(f"this token is not valid for the {role} role")
    raise Unauthorized("the bearer token is not valid")


def require(role: Role) -> DependsParam:
    """A route dependency enforcing `role`."""

    documented = Security(SECURITY_SCHEMES[role])

    async def dependency(  # a coroutine: no worker-thread hop (api/deps.py)
        request: Request,
        settings: SettingsDep,
        _: HTTPAuthorizationCredentials | None = documented,
    ) -> None:
        authorize(settings, role, bearer_token(request))

    marker: DependsParam = Depends(dependency)
    return marker
