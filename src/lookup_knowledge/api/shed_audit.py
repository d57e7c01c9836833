"""A lookup shed by admission control still leaves its audit row (docs/audit.md).

Admission refuses before the route runs (api/admission.py), so neither auth nor the schema has
seen the request. The row is kept only for a caller the route would have let in: a call
without a valid lookup token leaves no row, as a 401 lookup leaves none, so an anonymous flood
cannot fill the audit. The body is already buffered by the body limit; it is parsed only to
name the call, leniently, like the body of a 422.

This runs for every shed request of a burst, so it reads the one header it needs straight from
the ASGI scope and keeps the settings' token list (docs/performance.md#overload).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from starlette.types import Scope

from lookup_knowledge.api.auth import bearer_token_from, token_matches
from lookup_knowledge.domain.errors import Overloaded

if TYPE_CHECKING:
    from lookup_knowledge.api.deps import Resources
    from lookup_knowledge.settings import Settings

log = logging.getLogger(__name__)


class ShedAudit:
    """The `on_refused` of `AdmissionMiddleware` for POST /lookup_knowledge."""

    def __init__(self, resources: Callable[[], Resources | None]) -> None:
        self._resources = resources
        self._settings: Settings | None = None
        self._tokens: tuple[str, ...] = ()

    def __call__(self, scope: Scope, body: bytes, refused: Overloaded) -> None:
        resources = self._resources()
        if resources is None:
            return
        if not self._lets_in(resources.settings, scope):
            return
        try:
            data = json.loads(body)
        except ValueError:
            return  # not JSON: it names no call
        if not isinstance(data, dict):
            return
        try:
            resources.service.refused(data, message=refused.message, code=refused.code)
        except Exception:  # a shed call is answered whatever happens to its row
            log.exception("the audit row of a shed lookup could not be made")

    def _lets_in(self, settings: Settings, scope: Scope) -> bool:
        """Whether the lookup route would accept the request's bearer token (auth.authorize)."""
        if settings is not self._settings:
            self._settings, self._tokens = settings, settings.lookup_tokens
        if not self._tokens:
            return True  # the lookup role is open
        token = bearer_token_from(scope["headers"])
        return token is not None and token_matches(token, self._tokens)
