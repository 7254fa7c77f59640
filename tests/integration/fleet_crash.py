"""A target whose import kills every process of a fleet (not the test's own): the crash
loop of tests/integration/test_fleet_supervisor.py."""

from __future__ import annotations

import multiprocessing
import os

if multiprocessing.current_process().name != "MainProcess":
    os._exit(1)


def handler(job: object) -> None:
    pass
