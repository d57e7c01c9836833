"""Settings from the environment and `.env`, validated at start-up (docs/configuration.md)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal, Self

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from lookup_knowledge.pipeline.limits import PipelineLimits, ProjectionLimits

AUDIT_URL_SCHEMES = ("sqlite", "mysql+pymysql")
REDIS_URL_SCHEMES = ("redis", "rediss", "unix")
# Largest id the API accepts (docs/http-api.md#request-limits), used to prove the byte budget can
# always hold a result.
MAX_ID_CHARS = 128
# A bearer token as RFC 6750 section 2.1 writes it; a configured token must be one to be usable.
B64TOKEN = r"[A-Za-z0-9\-._~+/]+=*"
# Connections kept beyond MAX_CONCURRENT_LOOKUPS in each pool (py-rag, Redis): readiness probes,
# ledger reads, and calls whose caller went away finishing on their own.
POOL_HEADROOM = 16


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_file=".env", env_file_encoding="utf-8", extra="ignore", case_sensitive=False
    )

    # py-rag (docs/configuration.md#py-rag)
    pyrag_base_url: str | None = None
    pyrag_timeout_s: float = Field(5.0, gt=0, le=300)  # py-rag's answer (read, write)
    pyrag_connect_timeout_s: float = Field(2.0, gt=0, le=60)
    pyrag_pool_timeout_s: float = Field(1.0, gt=0, le=60)  # wait for a pooled connection
    pyrag_top_k: int = Field(20, ge=1, le=200)
    pyrag_mode: str = Field("hybrid", min_length=1, max_length=32)
    pyrag_docs_dir: Path | None = None
    # The embedded engine keeps its built index under DATA_DIR (engine/index_store.py).
    pyrag_index_cache: bool = True
    pyrag_max_body_bytes: int = Field(4 * 1024 * 1024, ge=1024)  # larger bodies: 502
    # The client's connection pool and wire: aiohttp (fast), or httpx's own (httpcore).
    pyrag_http_transport: Literal["aiohttp", "httpx"] = "aiohttp"

    # ledger (docs/configuration.md#ledger)
    redis_url: SecretStr | None = None
    redis_cluster: bool = False  # REDIS_URL names a Redis Cluster node (keys hash-tag the run)
    ledger_ttl_s: int = Field(604800, ge=1)
    ledger_pending_ttl_s: int = Field(60, ge=1)
    redis_connect_timeout_s: float = Field(1.0, gt=0, le=60)
    redis_socket_timeout_s: float = Field(2.0, gt=0, le=60)  # each command's answer
    redis_pool_timeout_s: float = Field(1.0, gt=0, le=60)  # wait for a pooled connection

    # local state (docs/configuration.md#local-state): unset audit paths live under DATA_DIR
    data_dir: Path = Path("./var")

    # audit (docs/configuration.md#audit); unset → under DATA_DIR (see `_data_dir_defaults`)
    audit_database_url: SecretStr = SecretStr("sqlite:///./var/audit.db")
    audit_spool_dir: Path = Path("./var/audit-spool")
    audit_spool_fsync_ms: int = Field(50, ge=1, le=10000)  # group flush of the spool to disk
    audit_db_timeout_s: float = Field(10.0, gt=0, le=300)  # connect/read/write, per call
    audit_writer_stuck_s: float = Field(15.0, gt=0)  # no progress while rows wait: "stuck"
    audit_details_max_bytes: int = Field(64 * 1024, ge=1024, le=16 * 1024 * 1024)
    audit_details_max_depth: int = Field(16, ge=2, le=31)  # MariaDB refuses JSON 32 deep
    audit_thread_nice: int = Field(10, ge=0, le=19)  # the audit threads yield the core (Linux)

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

    # MCP (docs/integration.md#mcp): the run every MCP tool call is ledgered under
    mcp_run_id: str | None = Field(None, pattern=r"^[A-Za-z0-9_.-]{1,128}$")

    # load (docs/configuration.md#load)
    # From benchmarks/overload_drill.py (docs/http-api.md#overload): under overload, 24 in flight
    # serves a fast and a slow py-rag best; the queue holds about 5 s of that throughput.
    max_concurrent_lookups: int = Field(24, ge=1, le=10000)
    lookup_queue_max: int = Field(512, ge=0, le=100000)  # lookups waiting for a slot
    lookup_queue_timeout_s: float = Field(5.0, ge=0, le=60)  # their longest wait

    # connections (docs/http-api.md#connections)
    http_header_timeout_s: float = Field(5.0, gt=0, le=300)  # a complete request head
    http_keepalive_timeout_s: int = Field(5, ge=1, le=300)  # silence between requests
    http_body_timeout_s: float = Field(10.0, gt=0, le=300)  # the whole request body
    http_max_connections: int = Field(2048, ge=1, le=100000)  # open per process

    # process
    host: str = "127.0.0.1"
    port: int = Field(8080, ge=0, le=65535)
    workers: int = Field(1, ge=1, le=64)
    log_level: str = "INFO"
    log_format: Literal["auto", "json", "console"] = "auto"

    @model_validator(mode="before")
    @classmethod
    def _data_dir_defaults(cls, data: Any) -> Any:
        """DATA_DIR, made absolute once, roots the local files every subcommand shares."""
        if not isinstance(data, dict):
            return data
        given = data.get("data_dir")
        blank = given is None or (isinstance(given, str) and not given.strip())
        data_dir = Path("./var" if blank else str(given)).expanduser().absolute()
        data = {**data, "data_dir": data_dir}
        if _unset(data.get("audit_database_url")):
            data["audit_database_url"] = f"sqlite:///{data_dir / 'audit.db'}"
        if _unset(data.get("audit_spool_dir")):
            data["audit_spool_dir"] = data_dir / "audit-spool"
        return data

    @field_validator(
        "pyrag_base_url",
        "redis_url",
        "lookup_api_tokens",
        "ledger_api_tokens",
        "pyrag_docs_dir",
        "mcp_run_id",
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

    @field_validator("audit_database_url")
    @classmethod
    def _audit_url(cls, value: SecretStr) -> SecretStr:
        scheme = value.get_secret_value().partition("://")[0].lower()
        if scheme not in AUDIT_URL_SCHEMES:
            shown = scheme or "no scheme"
            raise ValueError(
                f"unsupported database ({shown}): use mysql+pymysql://user:pass@host:3306/db "
                "or sqlite:///path/audit.db"
            )
        return value

    @field_validator("redis_url")
    @classmethod
    def _redis_url(cls, value: SecretStr | None) -> SecretStr | None:
        if value is None:
            return None
        if value.get_secret_value().partition("://")[0].lower() not in REDIS_URL_SCHEMES:
            raise ValueError("REDIS_URL must start with redis://, rediss:// or unix://")
        return value

    @field_validator("lookup_api_tokens", "ledger_api_tokens")
    @classmethod
    def _some_token(cls, value: SecretStr | None) -> SecretStr | None:
        # "," would otherwise leave the role open while its operator believes it guarded.
        if value is not None and not _split_tokens(value):
            raise ValueError("holds no token (comma-separated bearer tokens, or unset)")
        for token in _split_tokens(value):
            if not re.fullmatch(B64TOKEN, token):
                raise ValueError(
                    "each token must be an RFC 6750 b64token: letters, digits and -._~+/, "
                    "then = padding"
                )
        return value

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
    def index_store_dir(self) -> Path | None:
        """Where the embedded engine keeps its built index, or None when it may not."""
        return self.data_dir / "engine-index" if self.pyrag_index_cache else None

    @property
    def pool_connections(self) -> int:
        """Size of each connection pool: a lookup never waits for a connection under load."""
        return self.max_concurrent_lookups + POOL_HEADROOM

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


def _unset(value: object) -> bool:
    if isinstance(value, SecretStr):
        value = value.get_secret_value()
    return value is None or (isinstance(value, str) and not value.strip())


def _split_tokens(secret: SecretStr | None) -> tuple[str, ...]:
    if secret is None:
        return ()
    return tuple(t.strip() for t in secret.get_secret_value().split(",") if t.strip())
