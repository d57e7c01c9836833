"""A small Chinese↔English glossary of operations terms, so either language finds either runbook.

Engineers write "redis 内存过高" about a runbook written in English and "gateway timeout"
about one written in Chinese. A lexical engine cannot bridge that by itself; this list does,
for the vocabulary of the bundled runbooks. A query term counts as covered when the chunk
contains the term or one of its equivalents (`engine.scoring` explains the score), so the
glossary changes which words can satisfy a query term, never how much that term weighs.

Entries are tokens exactly as `engine.tokenize` produces them for a query (lowercase, plural
stripped, jieba's precise segmentation), one equivalence group per line; a test checks it.
Only single tokens: multi-word translations ("慢查询" ↔ "slow query") work through their
parts ("慢" ↔ "slow", "查询" ↔ "query").
"""

from __future__ import annotations

import functools

_GROUPS = """
内存 memory
超时 timeout
网关 gateway
上游 upstream
延迟 latency lag delay
积压 lag backlog
磁盘 disk
证书 certificate cert
过期 到期 expiry expired expire expiration
续期 renewal renew
复制 主从复制 replication
副本 replica
消费者 consumer
消费 consume consumer
连接 connection
连接池 pool
耗尽 exhaustion exhausted
限流 throttling throttle
垃圾 garbage
回收 collection gc
停顿 pause
域名解析 dns resolution
解析 resolution resolve
域名 domain dns
重启 restart
容器 container
驱逐 淘汰 eviction evict
碎片 fragmentation
缓存 cache
线程 thread
日志 log
告警 alert alerting
排查 troubleshoot troubleshooting diagnosis diagnose
原因 cause
配置 configuration config
集群 cluster
节点 node
分区 partition
索引 index
死锁 deadlock
慢 slow
查询 query sql
满 full
空间 space
过高 升高 高 high
失败 failure fail failed
错误 error
限制 limit
队列 queue
溢出 overflow oom
端口 port
句柄 handle
请求 request
响应 response
重试 retry
数据库 database db
数据 data
主库 primary master
从库 replica slave
消息 message
吞吐 throughput
进程 process
文件 file
网络 network
丢包 packet
带宽 bandwidth
负载 load
堆 heap
速率 rate
大 big large
时间 time clock
同步 sync synchronization synchronize
超限 limit exceed exceeded
杀 kill killed
主从 replication replica primary
健康检查 健康 health
检查 check
频繁 frequent frequently
抖动 毛刺 突增 飙升 spike jitter
拒绝 refused refuse reject rejected
接口 api endpoint
服务 service
可用 available availability
不可 unavailable
"""


@functools.cache
def _equivalents() -> dict[str, frozenset[str]]:
    table: dict[str, set[str]] = {}
    for line in _GROUPS.strip().splitlines():
        group = set(line.split())
        for token in group:
            table.setdefault(token, set()).update(group)
    return {token: frozenset(group) for token, group in table.items()}


def variants(term: str) -> frozenset[str]:
    """The term and every glossary equivalent of it (one step, not transitive)."""
    return _equivalents().get(term, frozenset((term,)))


def glossary_tokens() -> frozenset[str]:
    """Every token the glossary mentions (for tests)."""
    return frozenset(_equivalents())
