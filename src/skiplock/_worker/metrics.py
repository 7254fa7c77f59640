"""The worker's Prometheus metrics (``metrics_port``; docs/observability.md), on a registry of
its own."""

from __future__ import annotations

import logging
import threading
import time
from bisect import bisect_left
from collections.abc import Awaitable, Callable, Iterator, KeysView
from itertools import accumulate
from typing import TYPE_CHECKING, Any

from .._core.checks import integer
from .._core.job import Job
from ..errors import ConfigurationError
from .state import HeldJobs, task_label

if TYPE_CHECKING:
    from wsgiref.simple_server import WSGIServer

    from prometheus_client.metrics_core import Metric

__all__ = ["MetricsServer", "WorkerMetrics", "handler_name"]

log = logging.getLogger("skiplock.worker")

#: seconds: from a few milliseconds to an hour, for both handler time and wait
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600)


def handler_name(handler: Callable[..., Any]) -> str | None:
    """The ``task`` label of jobs that are not App task calls."""
    name = getattr(handler, "__qualname__", None) or getattr(handler, "__name__", None)
    return name if isinstance(name, str) else None


def registered_tasks(handler: Callable[..., Any]) -> KeysView[str] | None:
    """The task names of an App's handler, else None."""
    names = getattr(getattr(handler, "__self__", None), "task_names", None)
    return names if isinstance(names, KeysView) else None


class MetricsServer:
    """A registry and its ``/metrics`` server on *host*:*port*."""

    def __init__(self, port: object, host: object, option: str) -> None:
        try:
            from prometheus_client import CollectorRegistry
        except ImportError:
            raise ConfigurationError(
                f"{option} needs prometheus_client: pip install 'skiplock[prometheus]'"
            ) from None
        self.port = integer(port, option, 0, 65535)
        if not isinstance(host, str) or not host:
            host_option = option.replace("port", "host")
            raise ConfigurationError(
                f"{host_option} must be a host name or address, not {host!r:.80}"
            )
        self.host = host
        self.option = option
        self.registry = CollectorRegistry(auto_describe=True)
        self._server: WSGIServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def address(self) -> tuple[str, int] | None:
        """``(host, port)`` while serving, else None."""
        server = self._server
        if server is None:
            return None
        host, port = server.server_address[:2]
        return str(host), int(port)

    def start(self, what: str = "metrics") -> None:
        """Serve ``/metrics``; ConfigurationError if the port is taken."""
        if self._server is not None:
            return
        from prometheus_client import start_http_server

        try:
            self._server, self._thread = start_http_server(self.port, self.host, self.registry)
        except OSError as exc:
            raise ConfigurationError(
                f"cannot serve metrics on {self.host}:{self.port} ({exc.strerror or exc}): "
                f"choose another {self.option}"
            ) from exc
        log.info("%s on http://%s:%d/metrics", what, *(self.address or (self.host, self.port)))

    def stop(self) -> None:
        """Stop serving; the port is free on return."""
        server, thread = self._server, self._thread
        self._server = self._thread = None
        if server is not None:
            server.shutdown()
            server.server_close()
        if thread is not None:
            thread.join(5)


class WorkerMetrics:
    """A worker's metrics and their server."""

    def __init__(self, port: object, host: object, handler: Callable[..., Any]) -> None:
        #: the ``/metrics`` server (started and stopped by the worker)
        self.server = MetricsServer(port, host, "metrics_port")
        self.registry = self.server.registry
        self.fallback = handler_name(handler)
        self.tasks = registered_tasks(handler)
        self.duration = _Histogram(
            "skiplock_job_duration_seconds",
            "Seconds a job's handler ran (once per handler run, middleware included).",
            ("queue", "task"),
        )
        self.wait = _Histogram(
            "skiplock_job_wait_seconds",
            "Seconds from when a job was due (run_at) to its claim, on the database's clock.",
            ("queue",),
        )
        self.registry.register(self.duration)
        self.registry.register(self.wait)
        self._jobs: HeldJobs | None = None

    # -- wiring ---------------------------------------------------------------------------

    def attach(self, jobs: HeldJobs) -> None:
        """Count the outcomes of *jobs* by queue and task, and serve them."""
        self._jobs = jobs
        jobs.keep_detail(self.fallback, self.tasks)
        self.registry.register(_OutcomeCollector(jobs))

    @property
    def address(self) -> tuple[str, int] | None:
        """``(host, port)`` while the worker runs, else None."""
        return self.server.address

    def start(self) -> None:
        """Serve ``/metrics``."""
        self.server.start()

    def stop(self) -> None:
        self.server.stop()

    # -- the middleware layer -------------------------------------------------------------

    def around(self, job: Job, call_next: Callable[[Job], Any]) -> Any:
        self._waited(job)
        start = time.perf_counter()
        try:
            return call_next(job)
        finally:
            self._took(job, time.perf_counter() - start)

    async def around_async(self, job: Job, call_next: Callable[[Job], Awaitable[Any]]) -> Any:
        self._waited(job)
        start = time.perf_counter()
        try:
            return await call_next(job)
        finally:
            self._took(job, time.perf_counter() - start)

    def _waited(self, job: Job) -> None:
        if job.waited is not None:
            self.wait.observe((job.queue,), job.waited)

    def _took(self, job: Job, seconds: float) -> None:
        self.duration.observe((job.queue, task_label(job, self.fallback, self.tasks)), seconds)


class _Histogram:
    """A histogram by label values, one lock per observation."""

    def __init__(self, name: str, documentation: str, labels: tuple[str, ...]) -> None:
        self.name = name
        self.documentation = documentation
        self.labels = labels
        self._lock = threading.Lock()
        #: label values → a count per bucket (the last one +Inf), then the sum
        self._series: dict[tuple[str, ...], list[float]] = {}

    def observe(self, values: tuple[str, ...], amount: float) -> None:
        i = bisect_left(BUCKETS, amount)  # the first bucket whose bound is >= amount
        with self._lock:
            series = self._series.get(values)
            if series is None:
                series = self._series[values] = [0.0] * (len(BUCKETS) + 2)
            series[i] += 1
            series[-1] += amount

    def describe(self) -> list[Metric]:
        return [self._family({})]

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            series = {values: list(counts) for values, counts in self._series.items()}
        yield self._family(series)

    def _family(self, series: dict[tuple[str, ...], list[float]]) -> Metric:
        from prometheus_client.core import HistogramMetricFamily
        from prometheus_client.utils import floatToGoString

        family = HistogramMetricFamily(self.name, self.documentation, labels=list(self.labels))
        bounds = [*map(floatToGoString, BUCKETS), "+Inf"]
        for values, counts in sorted(series.items()):
            buckets = list(zip(bounds, accumulate(counts[:-1]), strict=True))
            family.add_metric(list(values), buckets, sum_value=counts[-1])
        return family


class _OutcomeCollector:
    """The held jobs' outcome counts, read at each scrape."""

    def __init__(self, jobs: HeldJobs) -> None:
        self.jobs = jobs

    def describe(self) -> list[Metric]:
        return list(self._families({}, 0))

    def collect(self) -> Iterator[Metric]:
        yield from self._families(self.jobs.detail_snapshot(), self.jobs.in_flight())

    @staticmethod
    def _families(counts: dict[tuple[str, str, str], int], running: int) -> Iterator[Metric]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        processed = CounterMetricFamily(
            "skiplock_jobs_processed",
            "Job attempts this worker ended, by outcome: done, retried, failed, discarded, "
            "cancelled, lost, released, snoozed.",
            labels=["queue", "task", "outcome"],
        )
        timeouts = CounterMetricFamily(
            "skiplock_job_timeouts",
            "Attempts this worker abandoned at their timeout (also counted as retried or "
            "failed in skiplock_jobs_processed_total).",
            labels=["queue", "task"],
        )
        for (queue, task, outcome), n in sorted(counts.items()):
            if outcome == "timeout":
                timeouts.add_metric([queue, task], n)
            else:
                processed.add_metric([queue, task, outcome], n)
        yield processed
        yield timeouts
        yield GaugeMetricFamily(
            "skiplock_worker_jobs_in_flight", "Handlers of this worker running now.", running
        )
