"""PostgreSQL URLs read by libpq itself (through psycopg), so every form a PostgreSQL user
has works: ``postgresql:///app`` (the local socket), ``postgresql://app@/app?host=/path``
(a socket folder), multi-host ``postgresql://h1,h2:5433/app?target_session_attrs=…``
(failover), and every libpq query option.

skiplock keeps the scheme dispatch (``postgres``, ``postgresql+psycopg``), its own checks
(a port is a number from 1 to 65535; one database is named), and the masking: libpq's own
message quotes the piece it could not read, which may be the password, so no quoted
piece is ever repeated.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from .errors import ConfigurationError

if TYPE_CHECKING:
    from ._url import DatabaseURL

__all__ = ["parse_libpq_url"]

_QUOTED = re.compile(r'"[^"]*"|\'[^\']*\'')


def parse_libpq_url(url: str, scheme: str, shown: str) -> DatabaseURL | None:
    """*url* parsed by libpq, or None when psycopg is not installed (the caller parses
    it then, and connecting reports the missing driver). *shown* is the masked URL."""
    try:
        from psycopg.conninfo import conninfo_to_dict
    except ImportError:
        return None
    from ._url import SCHEMES, DatabaseURL

    try:
        params = {k: str(v) for k, v in conninfo_to_dict("postgresql" + url[len(scheme) :]).items()}
    except Exception as exc:
        reason = _QUOTED.sub('"..."', str(exc).strip().splitlines()[0] if str(exc) else "")
        raise ConfigurationError(
            f"malformed database URL {shown!r}: libpq cannot read it ({reason})"
        ) from None
    if "hostaddr" not in params and any(not h.strip() for h in params.get("host", "x").split(",")):
        raise ConfigurationError(f"malformed database URL {shown!r}: an empty host in the list")
    ports = params.pop("port", "")
    for port in ports.split(","):
        if port and not (port.isdigit() and 1 <= int(port) <= 65535):
            raise ConfigurationError(
                f"malformed database URL {shown!r}: the port must be a number from 1 to 65535"
            )
    database = params.pop("dbname", "")
    if not database or "/" in database:
        raise ConfigurationError(
            f"malformed database URL {shown!r}: name one database after the host, e.g. .../mydb"
        )
    single = ports.isdigit()
    if ports.strip(",") and not single:
        params["port"] = ports  # one port per host: libpq reads the list
    return DatabaseURL(
        scheme=scheme,
        dialect=SCHEMES[scheme],
        host=params.pop("host", ""),
        port=int(ports) if single else None,
        database=database,
        user=params.pop("user", None),
        password=params.pop("password", None),
        options=params,
    )
