"""The examples of docs/observability.md, run as written, in order, on every backend; the
alert rules name only metrics that skiplock serves."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import skiplock

from .clients import DATABASE
from .doc_blocks import example_table, plain_blocks

pytest.importorskip("prometheus_client")
pytest.importorskip("opentelemetry.sdk")

# the examples name their table (obs_jobs), as a user's code would: one xdist worker runs
# them (scripts/test -n 4)
pytestmark = pytest.mark.xdist_group("obs_jobs")

DOC = Path(__file__).parents[2] / "docs" / "observability.md"
TEXT = DOC.read_text(encoding="utf-8")
BLOCKS = plain_blocks(DOC)
[RULES] = re.findall(r"```yaml\n(.*?)```", TEXT, re.DOTALL)

#: what the dashboard server serves (the queue's state), beside the worker's own metrics
DASHBOARD = {"skiplock_jobs", "skiplock_oldest_pending_age_seconds"}


@pytest.fixture
def doc_env(url: str, backend: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    if DATABASE[backend] == "mssql":
        pytest.skip("the examples are run on PostgreSQL and MySQL/MariaDB")
    with example_table(url, "obs_jobs", monkeypatch):
        yield


def test_the_examples_run_in_order(doc_env: None) -> None:
    assert len(BLOCKS) == 6
    namespace: dict[str, Any] = {"__name__": "docs_example"}
    try:
        for i, code in enumerate(BLOCKS):
            exec(compile(code, f"{DOC.name}:block{i + 1}", "exec"), namespace)
    finally:
        from skiplock.contrib.opentelemetry import SkiplockInstrumentor

        SkiplockInstrumentor().uninstrument()
        if "q" in namespace:
            namespace["q"].close()
    assert namespace["process"].attributes["messaging.destination.name"] == "orders"


def test_the_alert_rules_name_metrics_that_exist(queue: skiplock.Queue) -> None:
    worker = skiplock.Worker(queue, print, metrics_port=0)
    served = {m.name for m in worker.metrics.registry.collect()}  # counters: without _total
    named = set(re.findall(r"\b(skiplock_\w+)", RULES))
    known = DASHBOARD | served | {f"{n}_total" for n in served}
    assert named and named <= known, named - known
    assert {"skiplock_oldest_pending_age_seconds", "skiplock_jobs_processed_total"} <= named
