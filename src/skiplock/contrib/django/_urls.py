"""skiplock's URL for a Django database, built from its ``DATABASES`` entry."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from skiplock.errors import ConfigurationError

__all__ = ["queue_url"]

#: Django's ``connection.vendor`` → skiplock's URL scheme (``mysql`` covers MariaDB too)
_SCHEMES = {"postgresql": "postgresql", "mysql": "mysql", "microsoft": "mssql"}
_PORTS = {"postgresql": 5432, "mysql": 3306, "microsoft": 1433}


def queue_url(django_connection: Any) -> str:
    """The URL of *django_connection*'s database for skiplock's own connections. Raises
    ``ConfigurationError`` for a database skiplock does not run on.
    """
    vendor = django_connection.vendor
    scheme = _SCHEMES.get(vendor)
    if scheme is None:
        raise ConfigurationError(
            f"skiplock runs on PostgreSQL, MySQL/MariaDB and SQL Server, not on Django's "
            f"{vendor!r} database {django_connection.alias!r}"
        )
    s = django_connection.settings_dict
    auth = quote(str(s.get("USER") or ""), safe="")
    if s.get("PASSWORD"):
        auth += ":" + quote(str(s["PASSWORD"]), safe="")
    host = str(s.get("HOST") or "localhost")
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    port = s.get("PORT") or _PORTS[vendor]
    name = quote(str(s.get("NAME") or ""), safe="")
    return f"{scheme}://{auth}{'@' if auth else ''}{host}:{port}/{name}"
