"""One Prometheus endpoint for a fleet: each process reports its worker's samples over
its pipe; the supervisor serves their sums, ended processes' counters kept.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from .._worker.metrics import MetricsServer

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry
    from prometheus_client.metrics_core import Metric

__all__ = ["REPORT_EVERY", "FleetMetrics", "Reporter", "snapshot"]

#: seconds between two reports of a process (sent only when something changed)
REPORT_EVERY = 0.5

#: one sample: (sample name, its labels sorted, value)
Sample = tuple[str, tuple[tuple[str, str], ...], float]
#: one family: (name, type, documentation)
Family = tuple[str, str, str]
#: what a process sends: its families and their samples, in its registry's order
Report = tuple[tuple[Family, tuple[Sample, ...]], ...]
#: one family's samples added up: (sample name, its labels sorted) → value
Sums = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def _add(into: Sums, samples: tuple[Sample, ...]) -> None:
    for name, labels, value in samples:
        into[(name, labels)] = into.get((name, labels), 0.0) + value


def snapshot(registry: CollectorRegistry) -> Report:
    """The samples of *registry* as picklable values, without ``_created``."""
    families = []
    for metric in registry.collect():
        samples = tuple(
            (s.name, tuple(sorted(s.labels.items())), float(s.value))
            for s in metric.samples
            if not s.name.endswith("_created")
        )
        families.append(((metric.name, metric.type, metric.documentation), samples))
    return tuple(families)


class Reporter:
    """A fleet process's exporter: sends :func:`snapshot` of *registry* with *send* when it
    changed, every :data:`REPORT_EVERY` seconds and at the stop.
    """

    def __init__(self, registry: CollectorRegistry, send: Callable[[Report], None]) -> None:
        self.registry = registry
        self.send = send
        self._last: Report | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self._run, name="skiplock-fleet-metrics", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
            self._thread = None
        self.report()

    def report(self) -> None:
        """Send the samples if they changed since the last report."""
        now = snapshot(self.registry)
        if now != self._last:
            self._last = now
            self.send(now)

    def _run(self) -> None:
        while not self._stop.wait(REPORT_EVERY):
            self.report()


class FleetMetrics:
    """The supervisor's ``/metrics``: its processes' reports summed. Raises
    ConfigurationError for a bad *port* or *host*.
    """

    def __init__(self, port: object, host: object) -> None:
        self.server = MetricsServer(port, host, "metrics_port")
        self._lock = threading.Lock()
        #: place of the fleet → the last report of the process that holds it now
        self._live: dict[int, Report] = {}
        #: what the processes that ended reported last (counters and histograms only)
        self._ended: dict[Family, Sums] = {}
        self._places: set[int] = set()
        self._running = 0
        self._restarts = 0
        self.server.registry.register(self)

    @property
    def address(self) -> tuple[str, int] | None:
        return self.server.address

    # -- from the supervisor's loop -------------------------------------------------------

    def started(self, place: int) -> None:
        with self._lock:
            if place in self._places:
                self._restarts += 1
            self._places.add(place)
            self._running += 1

    def report(self, place: int, report: Report) -> None:
        """The process in *place* sent *report* (its totals since its start)."""
        with self._lock:
            self._live[place] = report

    def ended(self, place: int) -> None:
        """The process in *place* ended: keep its counters and histograms."""
        with self._lock:
            self._running -= 1
            report = self._live.pop(place, ())
            for family, samples in report:
                if family[1] == "gauge":  # a gauge of a process that ended is gone
                    continue
                _add(self._ended.setdefault(family, {}), samples)

    # -- from the server's thread (a prometheus_client collector) --------------------------

    def collect(self) -> Iterator[Metric]:
        from prometheus_client.metrics_core import Metric

        with self._lock:
            sums = {family: dict(ended) for family, ended in self._ended.items()}
            for report in self._live.values():
                for family, samples in report:
                    _add(sums.setdefault(family, {}), samples)
            running, restarts = self._running, self._restarts
        for (name, kind, documentation), summed in sums.items():
            metric = Metric(name, documentation, kind)
            for (sample, labels), value in summed.items():
                metric.add_sample(sample, dict(labels), value)
            yield metric
        processes = Metric(
            "skiplock_fleet_processes", "Worker processes of this fleet running now.", "gauge"
        )
        processes.add_sample("skiplock_fleet_processes", {}, running)
        yield processes
        replaced = Metric(
            "skiplock_fleet_process_restarts",
            "Processes started to replace one that ended (died, or ended at a timeout).",
            "counter",
        )
        replaced.add_sample("skiplock_fleet_process_restarts_total", {}, restarts)
        yield replaced
