"""Pure CPU of one lookup of 20 hits: adapter, pipeline, projection, audit row.

    python benchmarks/cpu_bench.py [--rounds 2000]

No I/O: py-rag's answer is fixed bytes (20 hits, excerpts of about 600 characters, mixed
Chinese and English), the stages run in this process, each timed over `--rounds` lookups
(median per lookup). The stations are the service's own functions in the service's order
(adapter decode and mapping, pipeline/run.py, audit/row.py, the spool line and the database
row of audit/lines.py and audit/sql.py). Each figure is the lowest median of 5 batches, so
that other work on a shared machine counts as little as it can. Target: <= 250 µs in total
(docs/performance.md#pure-cpu).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

from lookup_knowledge.adapters.pyrag import _RawSearchResponse, parse_search_body, to_outcome
from lookup_knowledge.audit.lines import encode_record
from lookup_knowledge.audit.row import AuditDraft
from lookup_knowledge.audit.sql import record_to_row
from lookup_knowledge.pipeline.assemble import assemble
from lookup_knowledge.pipeline.pack import pack_context
from lookup_knowledge.pipeline.postprocess import postprocess
from lookup_knowledge.pipeline.project import project
from lookup_knowledge.pipeline.run import project_lookup
from lookup_knowledge.settings import Settings

TARGET_US = 250.0
QUERY = "网关超时怎么排查"


def upstream_body(count: int = 20) -> bytes:
    hits = []
    for i in range(count):
        doc = f"runbooks/svc-{i % 7}"
        hits.append(
            {
                "evidence_key": f"{doc}#chunk-{i}",
                "document_id": doc,
                "source": f"{doc}.md",
                "title": f"Service {i % 7} runbook",
                "breadcrumb": f"Service {i % 7} > Diagnosis > Step {i}",
                "excerpt": (
                    "网关超时：先检查上游服务的响应时间。 Check the upstream timeout, "
                    "the connection pool and the load balancer health checks. "
                )
                * 6,
                "quality_score": round(0.95 - i * 0.03, 3),
            }
        )
    trace = {"mode": "hybrid", "timings_ms": {"bm25": 3.1, "dense": 7.4}, "candidates": 60}
    return json.dumps(
        {"hits": hits, "evidence_status": "supported", "retrieval_trace": trace},
        ensure_ascii=False,
    ).encode()


def _median_us(run: Callable[[], Any], rounds: int, batches: int = 5) -> float:
    """The lowest of `batches` medians: other work on a shared machine only ever adds."""
    medians = []
    for _ in range(batches):
        samples = []
        for _ in range(max(1, rounds // batches)):
            started = time.perf_counter()
            run()
            samples.append(time.perf_counter() - started)
        medians.append(statistics.median(samples))
    return min(medians) * 1e6


def measure(rounds: int) -> dict[str, float]:
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    limits, projection_limits = settings.pipeline_limits, settings.projection_limits
    body = upstream_body()
    outcome = parse_search_body(body)
    post = postprocess(outcome.hits, limits=limits)
    pack = pack_context(post.blocks, char_budget=limits.pack_char_budget)
    lookup = assemble(QUERY, post, pack, retrieval_trace=outcome.retrieval_trace)
    projection = project_lookup(lookup, tool_call_id="call-1", limits=projection_limits)

    def pipeline() -> None:
        post = postprocess(outcome.hits, limits=limits)
        pack = pack_context(post.blocks, char_budget=limits.pack_char_budget)
        assemble(QUERY, post, pack, retrieval_trace=outcome.retrieval_trace)

    def audit_row() -> None:
        draft = AuditDraft(run_id="run-1", tool_call_id="call-1", query=QUERY, step_id=None)
        draft.succeeded(
            outcome=outcome,
            lookup=lookup,
            result=projection.result,
            projection=projection.summary,
            body=projection.body,
        )
        record = draft.finish()
        encode_record(record)
        record_to_row(record)

    for run in (pipeline, audit_row):  # warm
        run()
    figures = {
        "adapter (decode, map 20 hits)": _median_us(lambda: parse_search_body(body), rounds),
        "pipeline (postprocess, pack, assemble)": _median_us(pipeline, rounds),
        "projection (contract and its bytes)": _median_us(
            lambda: project_lookup(lookup, tool_call_id="call-1", limits=projection_limits),
            rounds,
        ),
        "audit row (row, spool line, db row)": _median_us(audit_row, rounds),
    }
    # The same stations as they were, for a ratio from this one run.
    before = {
        "adapter, pydantic decode": _median_us(
            lambda: to_outcome(_RawSearchResponse.model_validate_json(body)), rounds
        ),
        "projection, JSON round trip": _median_us(
            lambda: project(
                lookup.model_dump_json(), tool_call_id="call-1", limits=projection_limits
            ),
            rounds,
        ),
    }
    return figures, before


def print_cpu_table(rounds: int = 2000) -> None:
    figures, before = measure(rounds)
    print(f"\npure CPU of one lookup of 20 hits (lowest median of 5 batches of {rounds // 5}):")
    for name, micros in figures.items():
        print(f"  {name:<42}{micros:8.0f} µs")
    total = sum(figures.values())
    print(
        f"  {'total':<42}{total:8.0f} µs  ({total / TARGET_US:.2f}x the {TARGET_US:.0f} µs target)"
    )
    print("  the previous way, same run:")
    for name, micros in before.items():
        print(f"    {name:<40}{micros:8.0f} µs")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2000)
    print_cpu_table(parser.parse_args().rounds)
