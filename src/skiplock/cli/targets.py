"""What ``skiplock enqueue`` and ``skiplock worker`` load from the user's code."""

from __future__ import annotations

from typing import Any

from .._fleet.target import load_target
from ..app import App, Task
from ..errors import ConfigurationError


def _load_target(target: str) -> Any:
    return load_target(target)  # the fleet's children load their target the same way


def _load_app(app_target: str) -> App:
    app = _load_target(app_target)
    if not isinstance(app, App):
        raise ConfigurationError(f"--app {app_target} is not a skiplock.App")
    return app


def _find_task(name: str, app_target: str | None) -> Task | None:
    """The task *name*: from ``--app``, else found by its name (``mail.send`` → ``send`` in
    module ``mail``).
    """
    if app_target is not None:
        app = _load_app(app_target)
        if name not in app.tasks:
            raise ConfigurationError(
                f"unknown task {name!r}: {app_target} registers "
                f"{', '.join(sorted(app.tasks)) or 'no tasks'}"
            )
        return app.tasks[name]
    parts = name.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            found: Any = _load_target(".".join(parts[:cut]) + ":" + ".".join(parts[cut:]))
        except ConfigurationError:
            continue
        if isinstance(found, Task) and found.name == name:
            return found
    return None
