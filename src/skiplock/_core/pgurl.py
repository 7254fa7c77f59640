"""PostgreSQL URLs read by libpq itself (through psycopg): every form libpq accepts."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode

from ..errors import ConfigurationError
from .dburl import SCHEMES, DatabaseURL, check_host

__all__ = ["parse_libpq_url"]

_ENCODE = (
    "a password or user name holding any of : / ? # [ ] @ % must be percent-encoded "
    "(urllib.parse.quote(password, safe=''))"
)


def parse_libpq_url(url: str, scheme: str, shown: str) -> DatabaseURL | None:
    """*url* parsed by libpq, or None when psycopg is not installed."""
    try:
        from psycopg.conninfo import conninfo_to_dict
    except ImportError:
        return None
    rest = url.partition("://")[2]
    netloc_end = min((i for i in map(rest.find, "/?#") if i >= 0), default=len(rest))
    if "@" in rest[netloc_end:] or rest[:netloc_end].count("@") > 1:
        # "user:pa/ss@host": the "/" (or "?", "#") ended the host early, and what looks
        # like the database or an option is a piece of the password; two '@' leave libpq
        # to guess where the password ends.
        raise ConfigurationError(f"malformed database URL {shown!r}: '@' after the host; {_ENCODE}")
    # libpq reads the host part, and host= / port= of the query (its socket form,
    # …/app?host=/var/run/postgresql); the other options go to the dialect's allow-list
    # as given (user=, dbname=, autocommit=… there are refused by name).
    base, _, query = rest.partition("#")[0].partition("?")
    try:
        given = dict(parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query)))
    except ValueError:
        raise ConfigurationError(f"malformed database URL {shown!r}: bad query string") from None
    where = {k: v for k, v in given.items() if k in ("host", "port")}
    libpq_url = "postgresql://" + base + ("?" + urlencode(where) if where else "")
    try:
        params = {k: str(v) for k, v in conninfo_to_dict(libpq_url).items()}
    except Exception:
        # libpq's message quotes the piece it could not read: it may be the password
        raise ConfigurationError(
            f"malformed database URL {shown!r}: libpq cannot read it; {_ENCODE}"
        ) from None
    hosts = params.get("host", "")
    if hosts and any(not h.strip() for h in hosts.split(",")):
        raise ConfigurationError(f"malformed database URL {shown!r}: an empty host in the list")
    for host in hosts.split(",") if hosts else ():
        if not host.startswith("/"):  # a socket folder is a path, not a host name
            check_host(host, shown)
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
    return DatabaseURL(
        scheme=scheme,
        dialect=SCHEMES[scheme],
        host=params.pop("host", ""),
        port=int(ports) if single else None,
        database=database,
        user=params.pop("user", None),
        password=params.pop("password", None),
        options={k: v for k, v in given.items() if k not in ("host", "port")},
        ports=ports if ports.strip(",") and not single else None,
    )
