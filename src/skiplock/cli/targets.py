"""What ``skiplock enqueue`` and ``skiplock worker`` load from the user's code: an object
named ``module:attr`` (an App, a handler), and a task by its name."""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

from ..app import App, Task
from ..errors import ConfigurationError


def _load_target(target: str) -> Any:
    module_name, _, attr = target.partition(":")
    if not module_name or not attr:
        raise ConfigurationError(f"expected module:app (e.g. myproject.tasks:app), not {target!r}")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # like `python -m`, find the user's own modules
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigurationError(f"cannot import {module_name!r}: {exc}") from exc
    found = module
    for part in attr.split("."):
        if not hasattr(found, part):
            raise ConfigurationError(f"module {module_name!r} has no attribute {attr!r}")
        found = getattr(found, part)
    return found


def _find_task(name: str, app_target: str | None) -> Task | None:
    """The task *name*: from ``--app module:app`` (which must know it), else found by its
    name (``mail.send`` → ``send`` in module ``mail``, how ``@app.task`` names tasks)."""
    if app_target is not None:
        app = _load_target(app_target)
        if not isinstance(app, App):
            raise ConfigurationError(f"--app {app_target} is not a skiplock.App")
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
