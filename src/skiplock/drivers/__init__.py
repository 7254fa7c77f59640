"""Drivers: how each driver runs skiplock's SQL, and skiplock's own connections and URLs.

May import: :mod:`skiplock._core.ops`, :mod:`skiplock.errors` and the standard library;
a driver package only inside the functions that need it.
"""

from __future__ import annotations

from .adapt import ACCEPTED, adapt, adapter_class
from .base import Adapter

__all__ = ["ACCEPTED", "Adapter", "adapt", "adapter_class"]
