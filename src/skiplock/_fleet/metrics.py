"""One Prometheus endpoint for a whole fleet (``Fleet(..., metrics_port=)``,
``skiplock worker APP --processes N --metrics-port P``).

Each process keeps its worker's metrics as a single worker does
(:class:`skiplock._worker.metrics.WorkerMetrics`: the ledger's outcome counts, the
histograms, the in-flight gauge) but serves nothing: its :class:`Reporter` sends the
samples of its registry to the supervisor over the process's pipe, every
:data:`REPORT_EVERY` seconds when they changed and once more when its worker ends (a clean
stop, a timeout that ends the process). The supervisor's :class:`FleetMetrics` serves
their sums:

- counters and histograms (every type but gauges): the sum of the last report of each
  running process plus everything reported by the processes that ended (kept when a
  process ends, however it ends), so a total never goes down when a process dies and
  another takes its place: Prometheus counters must be monotonic. A process killed
  (SIGKILL, a crash) loses only what it counted after its last report (at most
  :data:`REPORT_EVERY` seconds' worth), which never appeared on the endpoint;
- gauges (``skiplock_worker_jobs_in_flight``): the sum over the running processes only;
- the supervisor's own: ``skiplock_fleet_processes`` (running now) and
  ``skiplock_fleet_process_restarts_total`` (processes started to replace one that ended).

The series keep the single worker's labels (no ``pid`` or ``process`` label): a per-pid
series would be a new one at every restart, and the sum is what the alerts of
docs/observability.md read. Nothing goes over the pipe per job, and no file is written:
the children do not need ``prometheus_client``'s multiprocess mode (whose gauges and
custom collectors work differently).
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
    """The samples of *registry* as plain values (picklable), without the ``_created``
    timestamps (a sum of those means nothing)."""
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
    """A fleet process's exporter (in place of its worker's ``/metrics`` server): sends
    :func:`snapshot` of *registry* with *send* every :data:`REPORT_EVERY` seconds when it
    changed, from its start to its stop, and once more at the stop (the worker's last
    counts: its completions and releases are written by then)."""

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
        """Send the registry's samples if they changed since the last report."""
        now = snapshot(self.registry)
        if now != self._last:
            self._last = now
            self.send(now)

    def _run(self) -> None:
        while not self._stop.wait(REPORT_EVERY):
            self.report()


class FleetMetrics:
    """The supervisor's ``/metrics``: its processes' reports summed (see the module).
    *port* and *host* are checked here (ConfigurationError), before any process starts."""

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
        """A process was started in *place* (1 to N)."""
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
        """The process in *place* ended, however: keep its counters and histograms."""
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
