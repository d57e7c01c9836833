"""Request models of the HTTP API; snake_case names with camelCase aliases accepted."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from lookup_knowledge.domain.jsonsafe import escape_surrogates, find_lone_surrogate

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
