"""The engine over the bundled knowledge base, as the embedded default serves it."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from lookup_knowledge.engine import create_engine_app
from lookup_knowledge.engine.corpus import load_documents
from lookup_knowledge.engine.index import KnowledgeIndex
from lookup_knowledge.engine.markdown import DEFAULT_MAX_CHUNK_CHARS, Document
from lookup_knowledge.engine.scoring import Level


@pytest.fixture(scope="module")
def documents() -> list[Document]:
    return load_documents()


@pytest.fixture(scope="module")
def index(documents: list[Document]) -> KnowledgeIndex:
    return KnowledgeIndex(documents)


@pytest.fixture(scope="module")
def app() -> FastAPI:
    return create_engine_app()


@pytest.fixture
async def client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://engine") as client:
        yield client


async def _search(client: httpx.AsyncClient, query: str) -> dict[str, Any]:
    response = await client.post(
        "/api/v1/search", json={"query": query, "top_k": 20, "mode": "hybrid"}
    )
    assert response.status_code == 200
    body: dict[str, Any] = response.json()
    return body


@pytest.mark.parametrize(
    ("query", "runbook"),
    [
        ("网关超时怎么排查", "gateway-timeout"),
        ("redis memory usage high", "redis-memory"),
    ],
)
async def test_an_exact_topic_query_is_precise_on_its_runbook(
    client: httpx.AsyncClient, query: str, runbook: str
) -> None:
    body = await _search(client, query)

    assert body["evidence_status"] == "supported"
    assert body["relevance_level"] == "PRECISE"
    assert runbook in body["hits"][0]["source"]
    assert body["hits"][0]["quality_score"] >= 0.75


@pytest.mark.parametrize(
    "query",
    [
        "qwzx plorf vindle",
        "how to bake sourdough bread",
        "今天中午吃什么",
        "how do I write a cover letter",
        "git merge conflict resolution",
        "react 组件重复渲染",
        "etcd leader election lost",
        "zzkx 呜哩哇啦 blorp",
    ],
)
async def test_gibberish_and_unrelated_queries_have_no_evidence(
    client: httpx.AsyncClient, query: str
) -> None:
    body = await _search(client, query)

    assert body["evidence_status"] == "no_evidence"
    assert body["hits"] == []
    assert body["retrieval_trace"]["no_evidence_basis"] in {"no_candidates", "all_below_threshold"}


@pytest.mark.parametrize(
    ("query", "runbook"),
    [
        ("gateway timeout", "gateway-timeout"),  # English query, Chinese runbook
        ("redis 内存过高", "redis-memory"),  # Chinese query, English runbook
        ("证书过期", "tls-cert"),
        ("kafka consumer lag growing", "kafka-consumer-lag"),
        ("磁盘满了怎么办", "disk-full"),
        ("dns resolution failed", "dns"),
    ],
)
def test_chinese_and_english_queries_find_their_runbook_first(
    index: KnowledgeIndex, query: str, runbook: str
) -> None:
    hits = index.search(query, top_k=5).hits

    assert hits, query
    assert runbook in hits[0].chunk.source


def test_every_runbook_is_found_first_by_its_own_title(
    index: KnowledgeIndex, documents: list[Document]
) -> None:
    for document in documents:
        hits = index.search(document.title, top_k=5).hits
        assert hits and hits[0].chunk.source == document.source, document.title
        assert hits[0].quality_score >= 0.75


def test_every_bundled_runbook_has_a_category_and_bounded_chunks(
    documents: list[Document],
) -> None:
    for document in documents:
        assert document.category, document.source
        assert document.chunks, document.source
        assert all(len(c.content) <= DEFAULT_MAX_CHUNK_CHARS for c in document.chunks)


def test_bundled_ids_are_the_same_after_a_re_index(documents: list[Document]) -> None:
    again = load_documents()

    assert [c.evidence_key for d in again for c in d.chunks] == [
        c.evidence_key for d in documents for c in d.chunks
    ]


async def test_health_counts_the_bundled_documents(
    client: httpx.AsyncClient, documents: list[Document]
) -> None:
    body = (await client.get("/api/v1/health")).json()

    assert body == {
        "status": "ok",
        "documents": len(documents),
        "chunks": sum(len(d.chunks) for d in documents),
    }


# Pasted incident reports, the most informative queries an agent sends: 50-80 terms each.
_KAFKA_REPORT = (
    "Since the deploy at 14:10 the orders-events consumer group in our billing service is "
    "falling further and further behind. kafka-consumer-groups --describe shows lag above two "
    "million on partitions 3, 7 and 11 while the other partitions are almost at zero, and the "
    "group goes through a rebalance every few minutes. The consumer logs warn that the poll "
    "loop took longer than max.poll.interval.ms and that the member was removed from the group. "
    "Each record calls an external fraud API that became slow this afternoon, about 800 ms per "
    "call, and max.poll.records is still at the default of 500. The producers have not changed "
    "their rate. What should we check first, and should we increase the poll interval, lower "
    "max.poll.records, or add consumers?"
)
_DISK_REPORT = (
    "今天早上八点开始，支付服务所在的两台主机陆续报警，磁盘使用率达到 100%，应用写日志失败，"
    "接口大量报错 No space left on device。我们用 df -h 看根分区确实满了，但是用 du 统计各个"
    "目录加起来只有不到一半的空间，对不上。前几天有同事手动删过 /var/log/app 下面的大日志文件"
    "，但进程一直没有重启。另外有一台机器上 df -h 还有空间，可是 df -i 显示 inode 已经用完了"
    "，/tmp 下面有几百万个小的会话文件。想知道应该按什么顺序排查，怎么快速释放空间又不影响正"
    "在运行的服务，以及以后怎么配置日志轮转和告警，避免再次出现磁盘写满？"
)
_TERRAFORM_REPORT = (
    "Since this morning our CI pipeline fails at the terraform plan step for the production "
    "workspace. The job log says Error acquiring the state lock: ConditionalCheckFailedException, "
    "lock info ID 7c1e, path prod/network/terraform.tfstate, who runner@ci-42, created two hours "
    "ago. Nobody is running an apply right now; the previous pipeline was cancelled manually in "
    "the middle of an apply after it hung for twenty minutes on the NAT gateway resource. The "
    "DynamoDB table still has the lock item. Is it safe to run terraform force-unlock with that "
    "ID, or could the cancelled apply have left the state half written? How do we check whether "
    "the remote state in the S3 bucket is consistent before unlocking?"
)
_FRONTEND_REPORT = (
    "用户反馈从今天上午开始，官网首页在部分安卓手机的微信内置浏览器里打开是白屏，iPhone 和电"
    "脑上都正常。前端用的是 Vue 3 加 Vite 打包，昨天晚上刚发布了一个新版本，改了首页的轮播图"
    "组件，并且把 polyfill 的配置从 core-js 2 升级到了 3。用 vConsole 看到控制台报 SyntaxErro"
    "r: Unexpected token，指向打包后的 vendor 文件，看起来是可选链语法没有被转译。CDN 上的静"
    "态资源已经刷新过，缓存也清了，问题还在。回滚到上一个版本就好了。应该怎么配置 browserslis"
    "t 和 babel，才能让老版本的安卓 WebView 也能正常运行？"
)


@pytest.mark.parametrize(
    ("report", "runbook"),
    [(_KAFKA_REPORT, "kafka/kafka-consumer-lag.md"), (_DISK_REPORT, "host/disk-full.zh.md")],
    ids=["kafka-en", "disk-zh"],
)
def test_a_long_incident_report_finds_its_runbook_with_a_score_in_range(
    index: KnowledgeIndex, report: str, runbook: str
) -> None:
    hits = index.search(report, top_k=20).hits

    assert hits and hits[0].chunk.source == runbook
    assert hits[0].quality_score >= 0.5
    assert all(0.2 <= h.quality_score <= 1.0 for h in hits)


@pytest.mark.parametrize(
    "report",
    [
        pytest.param(_TERRAFORM_REPORT, id="terraform-en"),
        pytest.param(_FRONTEND_REPORT, id="frontend-zh"),
    ],
)
def test_a_long_report_about_something_else_has_no_evidence(
    index: KnowledgeIndex, report: str
) -> None:
    result = index.search(report, top_k=20)

    assert result.hits == ()
    assert result.no_evidence_basis == "all_below_threshold"


def _random_text(alphabet: str, length: int, seed: int) -> str:
    draw = random.Random(seed)
    return "".join(draw.choice(alphabet) for _ in range(length))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_chinese_characters_are_no_evidence(
    index: KnowledgeIndex, documents: list[Document], seed: int
) -> None:
    """Random characters hold hundreds of words by chance; covering sixteen of them covers
    nothing (docs/retrieval.md#quality-score). Drawn from the characters the knowledge base
    writes most, a thousand of them may still reach REFERENCE, never PRECISE."""
    counts = Counter(
        c for d in documents for chunk in d.chunks for c in chunk.content if "一" <= c <= "鿿"
    )
    commonest = "".join(c for c, _ in counts.most_common(400))
    anywhere = "".join(chr(point) for point in range(0x4E00, 0x9FA6))
    for alphabet, length in ((anywhere, 1000), (anywhere, 4000), (commonest, 4000)):
        result = index.search(_random_text(alphabet, length, seed), top_k=5)
        assert result.hits == (), (alphabet[:10], length, result.hits[0].quality_score)
    result = index.search(_random_text(commonest, 1000, seed), top_k=5)
    assert all(hit.level is not Level.PRECISE for hit in result.hits)
