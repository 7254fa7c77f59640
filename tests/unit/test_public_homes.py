"""The public names that were defined in private modules have a public home."""

from __future__ import annotations

import inspect
import typing

import skiplock
import skiplock.periodic


def test_schedule_is_defined_in_the_public_periodic_module() -> None:
    assert skiplock.Schedule is skiplock.periodic.Schedule
    assert skiplock.Schedule.__module__ == "skiplock.periodic"
    assert "name" in typing.get_type_hints(skiplock.Schedule)  # annotations resolve
    assert "class Schedule" in inspect.getsource(skiplock.Schedule)


def test_snooze_is_the_public_one_and_checks_its_arguments() -> None:
    assert issubclass(skiplock.Snooze, skiplock.SkiplockError)
    assert skiplock.Snooze(1.5).seconds == 1.5
    for bad in (-1, float("nan"), "1", True):
        try:
            skiplock.Snooze(bad)  # type: ignore[arg-type]
        except skiplock.ConfigurationError as exc:
            assert "Snooze(seconds)" in str(exc)
        else:
            raise AssertionError(f"Snooze({bad!r}) was accepted")
