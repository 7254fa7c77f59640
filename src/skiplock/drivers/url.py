"""Connection URLs: :func:`parse_url`, :class:`DatabaseURL`, :func:`mask_password`.
PostgreSQL URLs are read by libpq itself (through psycopg): every form libpq accepts.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit

from skiplock.errors import ConfigurationError

__all__ = ["SCHEMES", "DatabaseURL", "check_host", "mask_password", "parse_url"]

#: scheme → dialect module name under ``skiplock.dialects``
SCHEMES: dict[str, str] = {
    "postgresql": "postgresql",
    "postgres": "postgresql",
    "postgresql+psycopg": "postgresql",
    "mysql": "mysql",
    "mysql+mysqlconnector": "mysql",
    "mariadb": "mysql",
    "mariadb+mysqlconnector": "mysql",
    "mssql": "mssql",
    "mssql+pymssql": "mssql",
    "sqlserver": "mssql",
}

_PASSWORD_IN_URL = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.\-]*://[^:/?#@\s]*:)[^@\s]*(?=@)")
#: a password given as a query option (``?password=…``; mysql-connector's ``passwd``,
#: ``password1``…, ODBC's ``PWD``): refused by every dialect, but a URL refused before its
#: options are read is shown as given
_PASSWORD_OPTION = re.compile(r"(?i)(?P<head>[?&](?:password\d?|passwd|pwd)=)[^&#\s]*")
_IS_PASSWORD_OPTION = re.compile(r"(?i)password\d?|passwd|pwd")


def mask_password(text: str) -> str:
    """Replace every ``scheme://user:password@`` password in *text* with ``***``, and the
    value of a ``password=`` query option."""
    text = _PASSWORD_IN_URL.sub(lambda m: m.group("head") + "***", text)
    return _PASSWORD_OPTION.sub(lambda m: m.group("head") + "***", text)


@dataclass(frozen=True)
class DatabaseURL:
    """A parsed connection URL."""

    scheme: str
    dialect: str
    host: str
    port: int | None
    database: str
    user: str | None = None
    password: str | None = field(default=None, repr=False)
    options: dict[str, str] = field(default_factory=dict)
    #: one port per host of a multi-host PostgreSQL URL (``h1:5432,h2:5433``), for libpq
    ports: str | None = None

    @property
    def flavor(self) -> str:
        """The scheme's product name without a driver suffix: ``mariadb``, ``mysql``, …"""
        return self.scheme.split("+", 1)[0]

    def masked(self) -> str:
        """The whole URL with the password replaced by ``***``."""
        auth = ""
        if self.user is not None:
            auth = quote(self.user, safe="") + (":***" if self.password else "") + "@"
        hosts = self.host.split(",") if self.host else []
        ports = [str(self.port)] if self.port is not None else (self.ports or "").split(",")
        query = {
            k: "***" if _IS_PASSWORD_OPTION.fullmatch(k) else v for k, v in self.options.items()
        }
        database = quote(self.database, safe="")
        if not hosts or any(h.startswith("/") for h in hosts):
            # a local socket (folder): libpq's query form, host= and port= as given
            where = {"host": self.host} if self.host else {}
            if any(ports):
                where["port"] = ",".join(ports)
            shown = urlencode({**where, **query}, safe="/,")
            return f"{self.scheme}://{auth}/{database}" + (f"?{shown}" if shown else "")
        if len(ports) == 1:  # one port for every host (libpq's rule)
            ports = ports * len(hosts)
        netloc = ",".join(
            (f"[{h}]" if ":" in h else h) + (f":{p}" if p else "")
            for h, p in zip(hosts, ports + [""] * len(hosts), strict=False)
        )
        shown = urlencode(query, safe="/,")
        return f"{self.scheme}://{auth}{netloc}/{database}" + (f"?{shown}" if shown else "")

    def __str__(self) -> str:
        return self.masked()


def check_host(host: str, shown: str) -> None:
    """A host name the resolver can encode (RFC 1035 labels), or an IP address."""
    if ":" in host:
        return  # IPv6 (urllib and libpq checked it)
    labels = host[:-1].split(".") if host.endswith(".") else host.split(".")
    why = None
    if any(not label for label in labels):
        why = "an empty label (two dots in a row, or a leading dot)"
    elif any(len(label) > 63 for label in labels):
        why = "a label longer than 63 characters"
    elif len(host) > 253:
        why = "more than 253 characters"
    if why is not None:
        raise ConfigurationError(f"malformed database URL {shown!r}: its host name has {why}")
    try:
        host.encode("idna")
    except UnicodeError:
        raise ConfigurationError(
            f"malformed database URL {shown!r}: its host name is not a valid (IDNA) name"
        ) from None


_ENCODE = (
    "a password or user name holding any of : / ? # [ ] @ % must be percent-encoded "
    "(urllib.parse.quote(password, safe=''))"
)


def _parse_libpq(url: str, scheme: str, shown: str) -> DatabaseURL | None:
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


def _mask_own(url: str) -> str:
    head, sep, rest = url.partition("://")
    at = rest.rfind("@")
    colon = rest.find(":", 0, at)
    if not sep or at < 0 or colon < 0:
        return mask_password(url)
    return f"{head}://{rest[: colon + 1]}***{rest[at:]}"


def parse_url(url: str | None) -> DatabaseURL:
    """Parse *url* (None: ``$SKIPLOCK_URL``). Raises :class:`ConfigurationError` for a
    missing, malformed or unknown URL."""
    if url is None:
        url = os.environ.get("SKIPLOCK_URL")
        if not url:
            raise ConfigurationError(
                "no database URL: pass url=... or set SKIPLOCK_URL, e.g. "
                "postgresql://user@localhost:5432/dbname"
            )
    if not isinstance(url, str):
        raise ConfigurationError(f"the database URL must be a string, not {type(url).__name__}")
    shown = _mask_own(url)
    if "://" not in url:
        raise ConfigurationError(
            f"malformed database URL {shown!r}: expected scheme://user:password@host:port/database"
            f" with scheme one of {', '.join(sorted(SCHEMES))}"
        )
    scheme = url.split("://", 1)[0].lower()
    if scheme not in SCHEMES:
        raise ConfigurationError(
            f"unknown database in URL {shown!r}: scheme {scheme!r} is not one of "
            f"{', '.join(sorted(SCHEMES))}"
        )
    if any(ch.isspace() or ord(ch) < 32 for ch in url):
        raise ConfigurationError(f"malformed database URL {shown!r}: it contains whitespace")
    if SCHEMES[scheme] == "postgresql":
        parsed = _parse_libpq(url, scheme, shown)
        if parsed is not None:
            return parsed
    try:
        parts = urlsplit(url)
        port = parts.port
        hostname = parts.hostname
    except ValueError as exc:
        # urllib's message quotes the part it could not read, with either kind of quote,
        # and that part may be a piece of the password ("[" in a password makes it read
        # what follows as an IPv6 host): none of its text is shown.
        what = "port" if "port" in str(exc).lower() else "host"
        raise ConfigurationError(
            f"malformed database URL {shown!r}: its {what} cannot be read; the port must be a "
            "number from 1 to 65535, an IPv6 host goes in [brackets], and a password or user "
            "name holding any of : / ? # [ ] @ % must be percent-encoded "
            "(urllib.parse.quote(password, safe=''))"
        ) from None
    if "@" in url.partition("://")[2][len(parts.netloc) :]:
        # "user:pa/ss@host": the "/" (or "?", "#") ended the host early, and what looks
        # like the database or an option is a piece of the password.
        raise ConfigurationError(
            f"malformed database URL {shown!r}: '@' after the host; a password or user name "
            "holding / ? # @ must be percent-encoded (urllib.parse.quote(password, safe=''))"
        )
    if not hostname:
        raise ConfigurationError(f"malformed database URL {shown!r}: it names no host")
    check_host(hostname, shown)
    if port == 0:
        raise ConfigurationError(f"malformed database URL {shown!r}: port 0 is not a port")
    database = unquote(parts.path.lstrip("/"))
    if not database or "/" in database:
        raise ConfigurationError(
            f"malformed database URL {shown!r}: name one database after the host, e.g. .../mydb"
        )
    try:
        options = dict(parse_qsl(parts.query, keep_blank_values=True, strict_parsing=False))
    except ValueError:
        raise ConfigurationError(f"malformed database URL {shown!r}: bad query string") from None
    return DatabaseURL(
        scheme=scheme,
        dialect=SCHEMES[scheme],
        host=hostname,
        port=port,
        database=database,
        user=unquote(parts.username) if parts.username is not None else None,
        password=unquote(parts.password) if parts.password is not None else None,
        options=options,
    )
