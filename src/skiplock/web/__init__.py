"""The dashboard: ``skiplock web`` and :func:`create_app`, an ASGI application over one
queue table (extra ``skiplock[web]``; docs/dashboard.md).
"""

from __future__ import annotations

from .app import create_app
from .serve import check_host, serve

__all__ = ["check_host", "create_app", "serve"]
