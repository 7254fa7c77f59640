"""What a fleet's processes run, named so that a spawned process can import it again.

A child process is started fresh (``spawn``: nothing of the parent is shared, no
connection, no thread, no lock), so it cannot be handed the App or the function itself:
it imports it by name, ``module:attr``, as ``skiplock worker module:app`` does.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

from ..app import App
from ..errors import ConfigurationError

__all__ = ["load_target", "target_name"]


def _runnable(found: object, what: str) -> None:
    """Raise ConfigurationError unless *found* is what a fleet's process can run."""
    if not isinstance(found, App) and not callable(found):
        raise ConfigurationError(
            f"{what} is neither a skiplock.App nor a function taking a Job: a fleet runs "
            "one of those (or its 'module:attr' name)"
        )


def load_target(target: str) -> Any:
    """The object named *target* (``module:attr``, ``attr`` may be dotted). Raises
    ConfigurationError when it cannot be imported or found."""
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


def target_name(target: object) -> str:
    """``module:attr`` under which *target* (an App, a function) can be imported again: a
    string as it is; a function by its module and qualified name; any other object by the
    module-level name that holds it (``__main__`` last: a spawned process imports the main
    script again, under ``if __name__ == "__main__":`` guards). Raises ConfigurationError
    when there is none (an object made inside a function, a lambda)."""
    if isinstance(target, str):
        _runnable(load_target(target), target)  # fail here, not in every child
        return target
    _runnable(target, f"{target!r:.80}")
    module = getattr(target, "__module__", None)
    qualname = getattr(target, "__qualname__", None)
    if isinstance(module, str) and isinstance(qualname, str) and "<" not in qualname:
        name = f"{module}:{qualname}"
        try:
            if load_target(name) is target:
                return name
        except ConfigurationError:
            pass
    main = sys.modules.get("__main__")
    modules = [m for m in list(sys.modules.values()) if m is not None and m is not main]
    for mod in [*modules, *([main] if main is not None else [])]:
        for attr, value in list(getattr(mod, "__dict__", {}).items()):
            if value is target and not attr.startswith("__"):
                return f"{mod.__name__}:{attr}"
    raise ConfigurationError(
        f"cannot find {target!r:.80} at the top level of a module: a fleet's processes import "
        "what they run, so define it in a module (or pass 'module:attr')"
    )
