"""``manage.py skiplock_worker``: run a ``SkiplockBackend``'s tasks (with ``--processes N``,
in a :class:`skiplock.Fleet`).
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from argparse import ArgumentParser, ArgumentTypeError
from collections.abc import Callable
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.utils.crypto import get_random_string

from skiplock import Fleet, Queue, Worker
from skiplock._fleet import processes_from_text
from skiplock.errors import SkiplockError

from ..._compat import tasks
from ...backend import SkiplockBackend
from ...fleet import BACKEND_VARIABLE, TARGET
from ...runner import TaskRunner

log = logging.getLogger("skiplock.django")


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise ArgumentTypeError(f"must be a positive number of seconds, not {text}")
    return value


class Command(BaseCommand):  # type: ignore[misc]
    help = "Run the tasks of a skiplock TASKS backend (leases, heartbeats, fenced results)."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--backend", default="default", help="the TASKS alias")
        parser.add_argument(
            "--queue-name",
            default=None,
            help="queues to run, comma-separated (default: the backend's QUEUES)",
        )
        parser.add_argument(
            "--concurrency", type=int, default=4, help="tasks at once, per process (default 4)"
        )
        parser.add_argument(
            "--processes",
            default=None,
            help="run N worker processes under a supervisor ('auto': one per CPU), each "
            "with a worker id of its own (default: one process)",
        )
        parser.add_argument(
            "--metrics-port",
            type=int,
            default=None,
            help="serve Prometheus metrics at /metrics on this port (needs "
            "skiplock[prometheus]; with --processes, one endpoint for the fleet; default: "
            "none)",
        )
        parser.add_argument(
            "--metrics-host",
            default="127.0.0.1",
            help="the address the metrics server binds (default 127.0.0.1)",
        )
        parser.add_argument(
            "--lease", type=_positive, default=None, help="seconds (default: OPTIONS LEASE)"
        )
        parser.add_argument(
            "--worker-id", default=None, help="recorded in worker_ids (default: random)"
        )
        parser.add_argument(
            "--batch",
            action="store_true",
            help="exit once no task is ready or running (scheduled ones are left)",
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        try:
            backend = tasks.task_backends[opts["backend"]]
        except Exception as exc:
            raise CommandError(f"no TASKS backend {opts['backend']!r}: {exc}") from exc
        if not isinstance(backend, SkiplockBackend):
            raise CommandError(f"TASKS backend {opts['backend']!r} is not a SkiplockBackend")
        queues = (
            opts["queue_name"].split(",") if opts["queue_name"] else sorted(backend.queues)
        ) or ["default"]
        processes = opts["processes"]
        fleet = processes is not None
        if fleet:
            try:
                processes = processes_from_text(processes)
            except SkiplockError as exc:
                raise CommandError(f"--processes: {exc}") from None
        if fleet and opts["worker_id"] is not None:
            raise CommandError(
                "--worker-id names one process: with --processes each process has a random one"
            )
        worker_id = opts["worker_id"] or get_random_string(32)
        if not 0 < len(worker_id) <= 64:
            raise CommandError("--worker-id must be 1 to 64 characters")
        if opts["verbosity"] >= 1 and not logging.getLogger("skiplock").handlers:
            if fleet:  # on the root logger: a fleet's processes copy its format and levels
                logging.basicConfig(
                    format="%(asctime)s %(name)s[%(process)d] %(message)s", stream=sys.stderr
                )
            else:
                handler = logging.StreamHandler(self.stderr)
                handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(message)s"))
                logging.getLogger("skiplock").addHandler(handler)
            logging.getLogger("skiplock").setLevel(
                logging.DEBUG if opts["verbosity"] >= 3 else logging.INFO
            )
        options: dict[str, Any] = {
            "queues": queues,
            "concurrency": opts["concurrency"],
            "lease": opts["lease"] or backend.lease,
        }
        if opts["metrics_port"] is not None:
            options["metrics_port"] = opts["metrics_port"]
            options["metrics_host"] = opts["metrics_host"]
        try:
            q = backend.queue
            q.install()
            if fleet:
                os.environ[BACKEND_VARIABLE] = backend.alias  # the processes inherit it
                url = q.settings.given_url
                runner: Worker | Fleet = Fleet(
                    TARGET, processes, url=url, table=str(q.table), **options
                )
            else:
                runner = Worker(q, TaskRunner(backend, worker_id), **options)
        except SkiplockError as exc:
            raise CommandError(str(exc)) from exc
        who = f"{processes} processes" if fleet else worker_id
        log.info("skiplock_worker %s: backend %r, queues %s", who, backend.alias, queues)
        if opts["batch"]:
            stop = runner.stop if isinstance(runner, Fleet) else _stopper(runner)
            threading.Thread(target=_stop_when_idle, args=(q, queues, stop), daemon=True).start()
        if isinstance(runner, Fleet):
            code = runner.run()
            if code != 0:
                raise CommandError(f"the fleet stopped with status {code}", returncode=code)
        else:
            runner.run()


def _stopper(worker: Worker) -> Callable[[], None]:
    def stop() -> None:
        worker.stop(wait=False)

    return stop


def _stop_when_idle(q: Queue, queues: list[str], stop: Callable[[], None]) -> None:
    """--batch: stop the worker (or the fleet) once its queues hold nothing to do."""
    while True:
        time.sleep(0.2)
        try:
            s = q.stats(queues)
        except SkiplockError:
            continue
        if s.pending + s.running + s.expired == 0:
            stop()
            return
