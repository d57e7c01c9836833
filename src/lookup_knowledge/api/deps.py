"""`Annotated` dependency aliases; every route gets its collaborators from here."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated

from fastapi import Depends, Request

from lookup_knowledge.domain.ports import AuditPort, GuardOutcomePort, LedgerPort, SearchPort
from lookup_knowledge.settings import Settings

if TYPE_CHECKING:
    from lookup_knowledge.service import LookupService


@dataclass(slots=True)
class Resources:
    """Everything the lifespan opened; stored on `app.state.resources`."""

    settings: Settings
    search: SearchPort
    ledger: LedgerPort
    audit: AuditPort
    service: LookupService
    guard_outcomes: GuardOutcomePort


def get_resources(request: Request) -> Resources:
    resources: Resources = request.app.state.resources
    return resources


# The dependencies are coroutines: FastAPI runs a plain function in a worker thread, a hop
# per dependency per request for what is an attribute read.


async def resources_dependency(request: Request) -> Resources:
    return get_resources(request)


async def get_settings(request: Request) -> Settings:
    return get_resources(request).settings


async def get_ledger(request: Request) -> LedgerPort:
    return get_resources(request).ledger


async def get_service(request: Request) -> LookupService:
    return get_resources(request).service


ResourcesDep = Annotated[Resources, Depends(resources_dependency)]
SettingsDep = Annotated[Settings, Depends(get_settings)]
LedgerDep = Annotated[LedgerPort, Depends(get_ledger)]
ServiceDep = Annotated["LookupService", Depends(get_service)]
