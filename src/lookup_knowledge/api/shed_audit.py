"""A lookup shed by admission control still leaves its audit row (docs/audit.md).

Admission refuses before the route runs (api/admission.py), so neither auth nor the schema has
seen the request. The row is kept only for a caller the route would have let in: a call
without a valid lookup token leaves no row, as a 401 lookup leaves none, so an anonymous flood
cannot fill the audit. The body is already buffered by the body limit; it is parsed only to
name the call, leniently, like the body of a 422.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from starlette.requests import Request
from starlette.types import Scope

from lookup_knowledge.api.auth import Role, authorize, bearer_token
from lookup_knowledge.domain.errors import LookupKnowledgeError, Overloaded

if TYPE_CHECKING:
    from lookup_knowledge.api.deps import Resources

log = logging.getLogger(__name__)


class ShedAudit:
    """The `on_refused` of `AdmissionMiddleware` for POST /lookup_knowledge."""

    def __init__(self, resources: Callable[[], Resources | None]) -> None:
        self._resources = resources

    def __call__(self, scope: Scope, body: bytes, refused: Overloaded) -> None:
        resources = self._resources()
        if resources is None:
            return
        try:
            authorize(resources.settings, Role.LOOKUP, bearer_token(Request(scope)))
        except LookupKnowledgeError:
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
