"""Labelled metrics looked up once per label set (observability/metrics.py): still counted
apart by metric and by label, and the same child every time."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from audit_support import make_record
from lookup_knowledge.observability.metrics import Metrics


def samples(metrics: Metrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = metrics.render().decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_requests_are_counted_per_route_and_status_however_often_they_repeat() -> None:
    metrics = Metrics()
    for _ in range(3):
        metrics.observe_request("POST", "/lookup_knowledge", 200, 0.002)
    metrics.observe_request("POST", "/lookup_knowledge", 409, 0.002)
    metrics.observe_request("GET", "/healthz", 200, 0.0001)

    found = samples(metrics)
    ok = (("method", "POST"), ("route", "/lookup_knowledge"), ("status", "200"))
    assert found[("lk_http_requests_total", ok)] == 3
    assert found[("lk_http_requests_total", (*ok[:2], ("status", "409")))] == 1
    health = (("method", "GET"), ("route", "/healthz"), ("status", "200"))
    assert found[("lk_http_requests_total", health)] == 1
    by_route = (("method", "POST"), ("route", "/lookup_knowledge"))
    assert found[("lk_http_request_duration_seconds_count", by_route)] == 4


def test_lookups_are_counted_per_metric_even_when_their_labels_are_the_same() -> None:
    metrics = Metrics()
    stages = {"pyrag": 0.003, "ledger": 0.001}
    metrics.observe_lookup(make_record(1, truncated=True), stages, None)
    metrics.observe_lookup(make_record(2), stages, None)
    metrics.observe_lookup(make_record(3, success=False, error_code="CONFLICT"), stages, None)

    found = samples(metrics)
    assert found[("lk_lookups_total", (("outcome", "ok"),))] == 2
    assert found[("lk_lookups_total", (("outcome", "CONFLICT"),))] == 1
    assert found[("lk_lookup_truncated_total", (("truncated", "true"),))] == 1
    assert found[("lk_lookup_truncated_total", (("truncated", "false"),))] == 1
    assert found[("lk_lookup_stage_duration_seconds_count", (("stage", "pyrag"),))] == 3
    assert found[("lk_lookup_stage_duration_seconds_count", (("stage", "ledger"),))] == 3
    assert metrics.stage_latency.labels("pyrag") is metrics._child(metrics.stage_latency, "pyrag")
