"""Helpers for engine tests: small Markdown corpora written into tmp_path."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

WriteDocs = Callable[[dict[str, str]], Path]


@pytest.fixture
def write_docs(tmp_path: Path) -> WriteDocs:
    """Write {relative path: text} under tmp_path/docs and return that folder."""
    root = tmp_path / "docs"

    def write(files: dict[str, str]) -> Path:
        for relative, text in files.items():
            path = root / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        root.mkdir(exist_ok=True)
        return root

    return write


_REDIS_MEMORY = """---
category: redis
lang: en
tags: redis, memory
---
# Redis memory usage high

Redis memory usage high alerts fire when used_memory approaches maxmemory.

## Symptoms

Writes fail with OOM command not allowed when used memory is above maxmemory.

## Steps

### Check eviction policy

Run CONFIG GET maxmemory-policy and confirm an eviction policy such as allkeys-lru.
"""

_GATEWAY_TIMEOUT_ZH = """---
category: gateway
lang: zh
---
# 网关超时排查

网关超时通常表现为 504 Gateway Time-out，需要确认上游服务响应是否过慢。

## 排查步骤

检查 Nginx 的 proxy_read_timeout 配置，并查看 error.log 中的 upstream timed out 日志。
"""

_KAFKA_LAG = """# Kafka consumer lag

Consumer lag grows when consumers process messages slower than producers write them.

## Diagnosis

Compare the produce rate with the consume rate per partition.
"""


@pytest.fixture
def small_kb(write_docs: WriteDocs) -> Path:
    """Three runbooks: Redis memory (en), gateway timeout (zh), Kafka lag (en, no front matter)."""
    return write_docs(
        {
            "redis/redis-memory.md": _REDIS_MEMORY,
            "gateway/gateway-timeout.zh.md": _GATEWAY_TIMEOUT_ZH,
            "streaming/kafka-lag.md": _KAFKA_LAG,
        }
    )
