"""Settings from the environment and `.env`, validated at start-up (docs/configuration.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Self

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from lookup_knowledge.pipeline.limits import PipelineLimits, ProjectionLimits

# Largest id the API accepts (docs/http-api.md#request-limits), used to prove the byte budget can
# always hold a result.
MAX_ID_CHARS = 128


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_file=".env", env_file_encoding="utf-8", extra="ignore", case_sensitive=False
    )

    # py-rag (docs/configuration.md#py-rag)
    pyrag_base_url: str | None = None
    pyrag_timeout_s: float = Field(5.0, gt=0, le=300)
    pyrag_top_k: int = Field(20, ge=1, le=200)
    pyrag_mode: str = Field("hybrid", min_length=1)
    pyrag_docs_dir: Path | None = None

    # ledger (docs/configuration.md#ledger)
    redis_url: SecretStr | None = None
    redis_cluster: bool = False  # REDIS_URL names a Redis Cluster node (keys hash-tag the run)
    ledger_ttl_s: int = Field(604800, ge=1)
    ledger_pending_ttl_s: int = Field(60, ge=1)

    # audit (docs/configuration.md#audit)
    audit_database_url: SecretStr = SecretStr("sqlite:///./var/audit.db")
    audit_spool_dir: Path = Path("./var/audit-spool")

    # auth (docs/configuration.md#auth)
    lookup_api_tokens: SecretStr | None = None
    ledger_api_tokens: SecretStr | None = None

    # pipeline policy and contract bounds (docs/configuration.md#pipeline-policy)
    max_chunks_per_document: int = Field(2, ge=1)
    return_n: int = Field(5, ge=1)
    precise_threshold: float = Field(0.75, ge=0, le=1)
    reference_threshold: float = Field(0.5, ge=0, le=1)
    pack_char_budget: int = Field(4000, ge=1)
    projection_max_query_chars: int = Field(500, ge=1)
    projection_max_evidence: int = Field(8, ge=0)
    projection_max_excerpt_chars: int = Field(1200, ge=1)
    projection_max_bytes: int = Field(16384, ge=256)
    max_query_chars: int = Field(4000, ge=1)

    # process
    host: str = "127.0.0.1"
    port: int = Field(8080, ge=0, le=65535)
    workers: int = Field(1, ge=1, le=64)
    log_level: str = "INFO"

    @field_validator(
        "pyrag_base_url",
        "redis_url",
        "lookup_api_tokens",
        "ledger_api_tokens",
        "pyrag_docs_dir",
        mode="before",
    )
    @classmethod
    def _blank_is_unset(cls, value: object) -> object:
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("pyrag_base_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if not value.startswith(("http://", "https://")):
            raise ValueError("PYRAG_BASE_URL must start with http:// or https://")
        return value.rstrip("/")

    @field_validator("log_level")
    @classmethod
    def _log_level(cls, value: str) -> str:
        level = value.upper()
        if level not in {"DEBUG", "INFO", "WARNING", "ERROR"}:
            raise ValueError("LOG_LEVEL must be DEBUG, INFO, WARNING or ERROR")
        return level

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if self.reference_threshold > self.precise_threshold:
            raise ValueError("REFERENCE_THRESHOLD must not be above PRECISE_THRESHOLD")
        if self.workers > 1 and self.redis_url is None:
            raise ValueError(
                "WORKERS > 1 needs REDIS_URL: the in-process ledger lives in one process, so "
                "lookups and ledger reads would land in different workers"
            )
        # An empty result with the longest query and id must fit, so fail-closed never fires
        # for a configuration the service accepted.
        # 6 bytes per char covers \uXXXX escapes of control characters.
        worst_empty = 160 + MAX_ID_CHARS + 6 * self.projection_max_query_chars
        if self.projection_max_bytes < worst_empty:
            raise ValueError(
                f"PROJECTION_MAX_BYTES={self.projection_max_bytes} cannot hold an empty result "
                f"with a {self.projection_max_query_chars}-char query; use at least {worst_empty}"
            )
        return self

    @property
    def lookup_tokens(self) -> tuple[str, ...]:
        return _split_tokens(self.lookup_api_tokens)

    @property
    def ledger_tokens(self) -> tuple[str, ...]:
        return _split_tokens(self.ledger_api_tokens)

    @property
    def pipeline_limits(self) -> PipelineLimits:
        return PipelineLimits(
            max_chunks_per_document=self.max_chunks_per_document,
            return_n=self.return_n,
            precise_threshold=self.precise_threshold,
            reference_threshold=self.reference_threshold,
            pack_char_budget=self.pack_char_budget,
        )

    @property
    def projection_limits(self) -> ProjectionLimits:
        return ProjectionLimits(
            max_query_chars=self.projection_max_query_chars,
            max_evidence=self.projection_max_evidence,
            max_excerpt_chars=self.projection_max_excerpt_chars,
            max_bytes=self.projection_max_bytes,
        )


def _split_tokens(secret: SecretStr | None) -> tuple[str, ...]:
    if secret is None:
        return ()
    return tuple(t.strip() for t in secret.get_secret_value().split(",") if t.strip())
