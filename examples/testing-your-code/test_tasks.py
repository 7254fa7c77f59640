"""Tests of tasks.py with skiplock's pytest plugin: no conftest needed.

Run with ``SKIPLOCK_TEST_URL=postgresql://... pytest`` (or without it, with
``pip install 'skiplock[demo]'``, on an embedded PostgreSQL started for the session).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import tasks

import skiplock
from skiplock import testing


@pytest.fixture(autouse=True)
def queue(skiplock_queue: skiplock.Queue) -> Iterator[skiplock.Queue]:
    """Every test: the app's tasks enqueue into a fresh table of its own."""
    tasks.outbox.clear()
    with testing.isolate(tasks.app, skiplock_queue):
        yield skiplock_queue


def test_sign_up_enqueues_the_welcome_mail() -> None:
    tasks.sign_up("ada@example.com", lang="fr")
    [job] = testing.assert_enqueued(
        tasks.app, task=tasks.send_welcome, args=["ada@example.com"], kwargs={"lang": "fr"}
    )
    assert job.queue == "email"
    assert tasks.outbox == []  # enqueued, not run


def test_the_welcome_mail_is_sent() -> None:
    tasks.sign_up("ada@example.com")
    [job] = testing.drain(tasks.app)  # claim, run, complete: as a worker does
    assert (job.status, job.result) == ("done", "sent to ada@example.com (en)")
    assert tasks.outbox == ["ada@example.com"]


def test_a_mail_server_that_is_down_fails_the_job_after_three_attempts() -> None:
    tasks.sign_up("bob@down.example")
    [job] = testing.drain(tasks.app)  # the retries run at once: no back-off to wait for
    assert (job.status, job.attempt) == ("failed", 3)
    assert job.last_error == "tasks.MailServerDown: no answer for bob@down.example"
    with pytest.raises(AssertionError):
        testing.assert_enqueued(tasks.app, task="send_welcome")  # nothing left to run
