"""Request and response models of the HTTP API, as /openapi.json describes them.

Names are snake_case everywhere; camelCase is accepted only as input, as aliases of the request
fields. The response models document what the routes send: the routes themselves send stored
bytes (docs/ledger.md#entry), never a re-serialization.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from lookup_knowledge.domain.contract import RagToolResult
from lookup_knowledge.domain.jsonsafe import escape_surrogates, find_lone_surrogate
from lookup_knowledge.domain.ledger import LedgerStatus
from lookup_knowledge.domain.models import EvidenceStatus

ID_PATTERN = r"^[A-Za-z0-9_.-]{1,128}$"
Id = Annotated[str, Field(pattern=ID_PATTERN, min_length=1, max_length=128)]
Sha256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]


def _snake_or_camel(name: str) -> Any:
    return Field(validation_alias=AliasChoices(name, to_camel(name)))


class LookupRequest(BaseModel):
    """Body of POST /lookup_knowledge. Each field is also accepted in camelCase (`runId`)."""

    model_config = ConfigDict(extra="ignore")

    run_id: Annotated[Id, _snake_or_camel("run_id")]
    tool_call_id: Annotated[Id, _snake_or_camel("tool_call_id")]
    query: Annotated[str, Field(min_length=1)]
    step_id: Annotated[str | None, Field(max_length=128), _snake_or_camel("step_id")] = None
    filters: dict[str, str] | None = None

    @field_validator("run_id", "tool_call_id", "query", "step_id", "filters", mode="before")
    @classmethod
    def _valid_unicode(cls, value: Any) -> Any:
        """A lone surrogate is valid JSON but not text: refused here, naming the field."""
        texts = [*value.keys(), *value.values()] if isinstance(value, dict) else [value]
        for text in texts:
            if isinstance(text, str) and (index := find_lone_surrogate(text)) is not None:
                raise PydanticCustomError(
                    "lone_surrogate",
                    "not valid Unicode: a lone surrogate at character {index} of {text}",
                    {"index": index, "text": escape_surrogates(text)[:80]},
                )
        return value


class LedgerEntryOut(BaseModel):
    """One ledger entry (docs/ledger.md#entry). `result` is the answer exactly as the agent
    received it; in a run listing it is present only with `include=result`."""

    model_config = ConfigDict(extra="forbid")

    run_id: Id
    tool_call_id: Id
    tool_name: Literal["lookup_knowledge"] = "lookup_knowledge"
    status: LedgerStatus
    evidence_status: EvidenceStatus | None
    result: RagToolResult | None = None
    result_sha256: Sha256 | None
    query_sha256: Sha256
    created_at: str = Field(
        description="UTC, milliseconds, Z suffix", examples=["2026-11-30T10:00:00.123Z"]
    )
    error: str | None = Field(description="The error code when FAILED")


class RunLedgerPage(BaseModel):
    """A page of a run's entries in first-write order (docs/ledger.md#read-routes)."""

    model_config = ConfigDict(extra="forbid")

    run_id: Id
    entries: list[LedgerEntryOut]
    next_cursor: Id | None = Field(
        description="Pass as `cursor` for the next page; null on the last"
    )


class Health(BaseModel):
    status: Literal["ok"]


class Check(BaseModel):
    """One dependency's readiness; more fields may be added."""

    model_config = ConfigDict(extra="allow")

    status: Literal["up", "degraded", "down"]
    latency_ms: float
    error: str | None = Field(None, description="Why it is down")


class LedgerCheck(Check):
    backend: Literal["redis", "memory"]


class PyragCheck(Check):
    backend: Literal["remote", "embedded"]


class AuditCheck(Check):
    spool_depth: int = Field(ge=0, description="Rows waiting in the local spool")


class ReadinessChecks(BaseModel):
    model_config = ConfigDict(extra="allow")

    ledger: LedgerCheck
    audit: AuditCheck
    pyrag: PyragCheck


class Readiness(BaseModel):
    """GET /readyz: 200 when every dependency is usable, else 503 with the same body."""

    status: Literal["ready", "not_ready"]
    checks: ReadinessChecks
