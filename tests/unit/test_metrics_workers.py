"""Several workers: a worker that is gone stops counting in the live gauges of /metrics."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lookup_knowledge.observability.metrics import Metrics, forget_dead_workers

WORKER = textwrap.dedent(
    """
    import sys
    from lookup_knowledge.observability.metrics import Metrics

    metrics = Metrics()
    metrics.lookups_running.set(int(sys.argv[1]))
    metrics.lookups.labels(outcome="ok").inc()
    print("ready", flush=True)
    sys.stdin.read()  # runs until the test closes its stdin
    """
)


def start_worker(directory: Path, running: int) -> subprocess.Popen[str]:
    worker = subprocess.Popen(
        [sys.executable, "-c", WORKER, str(running)],
        env={"PROMETHEUS_MULTIPROC_DIR": str(directory), "PATH": "/usr/bin:/bin"},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert worker.stdout is not None and worker.stdout.readline().strip() == "ready"
    return worker


def sample(text: str, name: str) -> float:
    [value] = [
        float(line.rpartition(" ")[2]) for line in text.splitlines() if line.startswith(name)
    ]
    return value


def test_a_dead_workers_live_gauges_are_dropped_and_its_counters_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    alive = start_worker(tmp_path, running=2)
    gone = start_worker(tmp_path, running=3)
    try:
        gone.communicate("")  # the worker exits, as one killed or crashed would
        monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))

        text = Metrics().render().decode()

        assert sample(text, "lk_lookups_running ") == 2  # the live worker's only
        assert sample(text, 'lk_lookups_total{outcome="ok"}') == 2  # both workers' calls
        assert not list(tmp_path.glob(f"gauge_live*_{gone.pid}.db"))
        assert list(tmp_path.glob(f"gauge_live*_{alive.pid}.db"))
    finally:
        alive.communicate("")


def test_forgetting_keeps_every_running_process(tmp_path: Path) -> None:
    alive = start_worker(tmp_path, running=1)
    try:
        assert forget_dead_workers(str(tmp_path)) == []
        assert list(tmp_path.glob(f"gauge_live*_{alive.pid}.db"))
    finally:
        alive.communicate("")
