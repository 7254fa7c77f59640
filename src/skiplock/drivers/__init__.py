"""Drivers: how each driver runs skiplock's SQL, and skiplock's own connections and URLs."""

from __future__ import annotations

from .adapt import ACCEPTED, adapt, adapter_class
from .base import Adapter

__all__ = ["ACCEPTED", "Adapter", "adapt", "adapter_class"]
