"""A small Chinese↔English glossary of operations terms, so either language finds either runbook.

Engineers write "redis 内存过高" about a runbook written in English and "gateway timeout"
about one written in Chinese. A lexical engine cannot bridge that by itself; this list does,
for the vocabulary of the bundled runbooks. A query term counts as covered when the chunk
contains the term or one of its equivalents (`engine.scoring` explains the score), so the
glossary changes which words can satisfy a query term, never how much that term weighs.

One equivalence group per line. Each entry is a word that `engine.tokenize` reads as a single
query token (jieba's precise segmentation for Chinese); the table holds the entries as the
tokenizer produces them (lowercase, stemmed: `expired` → `expir`), so any inflection of an
English entry finds the group. A test checks every entry. Only single tokens: multi-word
translations ("慢查询" ↔ "slow query") work through their parts ("慢" ↔ "slow", "查询" ↔
"query"). The vocabulary is that of operations runbooks in general (hosts, networks, queues,
databases, certificates, deployments), not of particular queries.
"""

from __future__ import annotations

import functools

from lookup_knowledge.engine import tokenize

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
时钟 clock
服务器 主机 server host
均衡 balancer balancing
平衡 balance
缓冲 缓冲区 buffer buffering
使用率 利用率 usage utilization
校验 验证 verify verification validate validation
落后 behind lag
生产者 producer
生产 produce production producer
轮询 poll polling
间隔 interval
超过 exceed exceeded
堆积 积压 backlog
增长 增加 上升 grow growth increase
就绪 ready readiness
存活 liveness
探针 probe
分片 shard
退出 exit
内核 kernel
中断 interrupt
上下文 context
代理 proxy
路由 route routing
防火墙 firewall
监控 monitor monitoring
指标 metric
阈值 threshold
水位 watermark
部署 发布 deploy deployment release
回滚 rollback
扩容 scale scaling
升级 upgrade
版本 version
客户端 client
命令 command
参数 parameter
事务 transaction
泄漏 泄露 leak
栈 stack
心跳 heartbeat
会话 session
握手 handshake
签名 signature
吊销 revoke revocation
漂移 偏差 drift skew
偏移 偏移量 offset
分配 allocation allocate assign
状态 status state
红 red
黄 yellow
清理 cleanup clean
删除 delete
挂载 mount
目录 directory
报错 error
异常 exception abnormal
崩溃 crash
启动 start startup
并发 concurrency concurrent
毫秒 millisecond ms
流量 traffic
调用 call invoke
依赖 dependency
下游 downstream
转发 forward
头 头部 header
压缩 compress compression
读取 read
写入 write
只读 readonly
实例 instance
容量 capacity
扫描 scan
重传 retransmit retransmission
吞吐量 throughput
峰值 peak
瓶颈 bottleneck
性能 performance
优化 tune tuning optimize optimization
"""


def entries() -> list[list[str]]:
    """The groups as written, one list of words per line (for tests)."""
    return [line.split() for line in _GROUPS.strip().splitlines()]


@functools.cache
def _equivalents() -> dict[str, frozenset[str]]:
    table: dict[str, set[str]] = {}
    for words in entries():
        # An entry that is not a single query token could never match one; the test that
        # checks every entry keeps this filter from ever dropping anything.
        group = {t[0] for t in map(tokenize.query_tokens, words) if len(t) == 1}
        for token in group:
            table.setdefault(token, set()).update(group)
    return {token: frozenset(group) for token, group in table.items()}


def variants(term: str) -> frozenset[str]:
    """The term and every glossary equivalent of it (one step, not transitive)."""
    return _equivalents().get(term, frozenset((term,)))


def glossary_tokens() -> frozenset[str]:
    """Every token the glossary mentions (for tests)."""
    return frozenset(_equivalents())
