"""What a fleet's processes run, named ``module:attr`` so a spawned process can import it."""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

from ..app import App
from ..errors import ConfigurationError

__all__ = ["load_target", "target_name"]


def _runnable(found: object, what: str) -> None:
    if not isinstance(found, App) and not callable(found):
        raise ConfigurationError(
            f"{what} is neither a skiplock.App nor a function taking a Job: a fleet runs "
            "one of those (or its 'module:attr' name)"
        )


def load_target(target: str) -> Any:
    """The object named *target* (``module:attr``, ``attr`` may be dotted). Raises
    ConfigurationError when it cannot be imported or found.
    """
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
    """``module:attr`` under which *target* can be imported again. Raises
    ConfigurationError when there is none (a lambda, an object made in a function).
    """
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
