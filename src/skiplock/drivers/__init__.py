"""Drivers: how each DB-API driver runs skiplock's SQL (the adapters, sync and async side
by side, per database), and how skiplock opens connections of its own
(``<database>_connect.py``: connect, LISTEN, the socket a pooled connection's health is
read from; :mod:`.health`).

:func:`adapt` (:mod:`.adapt`) turns what a caller passes as ``conn=`` into an
:class:`Adapter`; :mod:`.aio_adapt` does the same for the AsyncQueue. :mod:`.run_async`
(the source) and :mod:`.run` (generated from it) are the loops that drive an operation of
:mod:`skiplock._core.ops` over an adapter: on skiplock's own connection or the caller's.

May import: :mod:`skiplock._core.ops` (the requests an adapter runs), :mod:`skiplock.errors`
and the standard library; a driver package only inside the functions that need it. Never
the dialects, the shell or anything above them.
"""

from __future__ import annotations

from .adapt import ACCEPTED, adapt, adapter_class
from .base import Adapter

__all__ = ["ACCEPTED", "Adapter", "adapt", "adapter_class"]
