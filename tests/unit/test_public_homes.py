"""The public names that were defined in private modules have a public home, and the old
import paths still work."""

from __future__ import annotations

import inspect
import typing

import skiplock
import skiplock.periodic
from skiplock._worker import services as service


def test_schedule_is_defined_in_the_public_periodic_module() -> None:
    assert skiplock.Schedule is skiplock.periodic.Schedule
    assert skiplock.Schedule.__module__ == "skiplock.periodic"
    assert "name" in typing.get_type_hints(skiplock.Schedule)  # annotations resolve
    assert "class Schedule" in inspect.getsource(skiplock.Schedule)


def test_the_schedulers_module_still_exports_what_it_did() -> None:
    assert service.Schedule is skiplock.periodic.Schedule
    assert service.tick_kwargs is skiplock.periodic.tick_kwargs
    assert service.MAX_CATCH_UP == skiplock.periodic.MAX_CATCH_UP
