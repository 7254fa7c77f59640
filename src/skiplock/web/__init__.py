"""The dashboard: ``skiplock web`` and :func:`create_app`, an ASGI application
(Starlette, Jinja2 templates, no JavaScript) over one queue table.

Pages: ``/`` (every queue), ``/jobs`` (keyset-paged, newest first), ``/jobs/{id}``,
``/workers``, ``/periodic``; a JSON API under ``/api/``; ``/metrics`` (Prometheus text);
actions (retry, cancel) as POSTs with a CSRF token. See docs/dashboard.md.

Built on the public API: it reaches the database only through the queue's methods. Needs
the ``web`` extra (``pip install 'skiplock[web]'``).

May import: the public modules of :mod:`skiplock` (the queues, ``admin``, ``job``,
``errors``) and :mod:`skiplock._core` helpers without I/O.
"""

from __future__ import annotations

from .app import create_app
from .serve import check_host, serve

__all__ = ["check_host", "create_app", "serve"]
