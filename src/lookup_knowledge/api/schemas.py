"""Request models of the HTTP API; snake_case names with camelCase aliases accepted."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

ID_PATTERN = r"^[A-Za-z0-9_.-]{1,128}$"
Id = Annotated[str, Field(pattern=ID_PATTERN)]


class LookupRequest(BaseModel):
    """Body of POST /lookup_knowledge."""

    model_config = ConfigDict(
        alias_generator=to_camel, validate_by_name=True, validate_by_alias=True, extra="ignore"
    )

    run_id: Id
    tool_call_id: Id
    query: str
    step_id: Annotated[str, Field(max_length=128)] | None = None
    filters: dict[str, str] | None = None
