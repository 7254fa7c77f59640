"""Test helpers for code that enqueues and runs skiplock jobs (docs/testing-your-code.md).

::

    from skiplock import testing

    def test_signup(skiplock_queue):            # a fresh table (the pytest plugin)
        with testing.isolate(app, skiplock_queue):
            signup("ada@example.com")           # calls send_welcome.defer(...)
            testing.assert_enqueued(app, task=send_welcome, args=["ada@example.com"])
            [job] = testing.drain(app)          # the worker's claim, handler, outcome
            assert job.status == "done"

This package imports no pytest; only the plugin does.
"""

from __future__ import annotations

from ._drain import DRAIN_LEASE, JobFailed, drain, drain_async
from ._enqueued import assert_enqueued, assert_enqueued_async
from ._isolate import Isolation, isolate

__all__ = [
    "DRAIN_LEASE",
    "Isolation",
    "JobFailed",
    "assert_enqueued",
    "assert_enqueued_async",
    "drain",
    "drain_async",
    "isolate",
]
