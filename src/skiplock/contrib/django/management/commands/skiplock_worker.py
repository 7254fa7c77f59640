"""``manage.py skiplock_worker``: run the tasks of a ``SkiplockBackend`` with skiplock's
lease, heartbeat and fencing (a :class:`skiplock.Worker`)."""

from __future__ import annotations

import logging
import threading
import time
from argparse import ArgumentParser, ArgumentTypeError
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.utils.crypto import get_random_string

from skiplock import Worker
from skiplock.errors import SkiplockError

from ..._compat import tasks
from ...backend import SkiplockBackend
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
        parser.add_argument("--concurrency", type=int, default=4, help="tasks at once")
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
        worker_id = opts["worker_id"] or get_random_string(32)
        if not 0 < len(worker_id) <= 64:
            raise CommandError("--worker-id must be 1 to 64 characters")
        if opts["verbosity"] >= 1 and not logging.getLogger("skiplock").handlers:
            handler = logging.StreamHandler(self.stderr)
            handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(message)s"))
            logging.getLogger("skiplock").addHandler(handler)
            logging.getLogger("skiplock").setLevel(
                logging.DEBUG if opts["verbosity"] >= 3 else logging.INFO
            )
        try:
            q = backend.queue
            q.install()
            worker = Worker(
                q,
                TaskRunner(backend, worker_id),
                queues=queues,
                concurrency=opts["concurrency"],
                lease=opts["lease"] or backend.lease,
            )
        except SkiplockError as exc:
            raise CommandError(str(exc)) from exc
        log.info("skiplock_worker %s: backend %r, queues %s", worker_id, backend.alias, queues)
        if opts["batch"]:
            threading.Thread(target=_stop_when_idle, args=(worker, queues), daemon=True).start()
        worker.run()


def _stop_when_idle(worker: Worker, queues: list[str]) -> None:
    """--batch: stop the worker once its queues hold nothing ready or running."""
    while True:
        time.sleep(0.2)
        try:
            s = worker.queue.stats(queues)
        except SkiplockError:
            continue
        if s.pending + s.running + s.expired == 0:
            worker.stop(wait=False)
            return
