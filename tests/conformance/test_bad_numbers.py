"""Every keyword that takes a number is checked where it is first given, before anything
is written or waited for: a task's call timeout, a workflow's wait, a task's options."""

from __future__ import annotations

import asyncio
import math
import threading
from typing import Any

import pytest

import skiplock

BAD_TIMEOUTS = [-1, math.nan, math.inf, "30", True, 10**400]


@pytest.mark.one_table
@pytest.mark.parametrize("timeout", BAD_TIMEOUTS, ids=repr)
def test_a_bad_call_timeout_is_refused_before_the_job_is_enqueued(
    queue: skiplock.Queue, timeout: Any
) -> None:
    app = skiplock.App(queue)

    @app.task(name="add")
    def add(a: int, b: int) -> int:
        return a + b

    with pytest.raises(skiplock.ConfigurationError, match="timeout must be a number"):
        add.call(1, 2, timeout=timeout)

    async def call_async() -> None:
        try:
            with pytest.raises(skiplock.ConfigurationError, match="timeout must be a number"):
                await add.call_async(1, 2, timeout=timeout)
        finally:
            await app.async_queue.close()

    asyncio.run(call_async())
    assert queue.list_jobs(limit=5) == []  # nothing enqueued, by either call


def _outcome(wait: Any) -> BaseException | None:
    """What *wait()* raised, run in a thread for at most 30 s (None: it returned; an
    AssertionError when it still waits)."""
    found: list[BaseException | None] = []

    def run() -> None:
        try:
            wait()
            found.append(None)
        except BaseException as exc:
            found.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(30)
    assert found, "the wait is still waiting after 30 s"
    return found[0]


@pytest.mark.parametrize(
    "options",
    [
        {"timeout": math.nan},
        {"timeout": "5"},
        {"timeout": -1},
        {"timeout": True},
        {"interval": -1},
        {"interval": 0},
        {"interval": math.nan},
        {"interval": "1"},
    ],
    ids=repr,
)
def test_a_workflows_wait_refuses_what_q_wait_refuses(
    queue: skiplock.Queue, options: dict[str, Any]
) -> None:
    app = skiplock.App(queue)

    @app.task(name="step")
    def step(x: int) -> int:
        return x

    handle = skiplock.chain(step.s(1), step.s()).enqueue()  # no worker: it never ends
    options = {"timeout": 5, **options}
    error = _outcome(lambda: handle.wait(**options))
    assert isinstance(error, skiplock.ConfigurationError), repr(error)

    async def wait_async() -> None:
        await handle.wait_async(**options)

    error = _outcome(lambda: asyncio.run(wait_async()))
    assert isinstance(error, skiplock.ConfigurationError), repr(error)


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("max_attempts", 0),
        ("max_attempts", True),
        ("max_attempts", "3"),
        ("priority", 2**31),
        ("priority", 1.5),
        ("timeout", math.nan),
        ("timeout", 0),
        ("queue", ""),
        ("name", 42),
    ],
)
def test_bad_task_options_are_refused_at_registration(
    queue: skiplock.Queue, option: str, value: object
) -> None:
    app = skiplock.App(queue)
    with pytest.raises(skiplock.ConfigurationError, match=option.replace("name", "task's name")):
        app.task(**{option: value})(lambda: None)  # type: ignore[call-overload]
    assert app.tasks == {}
