"""A fleet whose spec is large (6,000 queue names, about 130 KB pickled), run as a script
by tests/integration/test_fleet.py: the supervisor's ``process.start()`` then writes it to
the new process's pipe and waits there until that interpreter has started and reads it,
which holds the supervisor inside its first start long enough for a signal to be aimed
at it. The App is fleet_app's (``SKIPLOCK_URL``, ``FLEET_TABLE``)."""

from __future__ import annotations

import logging
import sys

import skiplock

if __name__ == "__main__":
    logging.basicConfig(
        level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(name)s: %(message)s"
    )
    queues = [f"unused-queue-{i:05d}" for i in range(6000)]
    fleet = skiplock.Fleet("fleet_app:app", processes=1, queues=[*queues, "default"], grace=1)
    raise SystemExit(fleet.run())
