"""What a parsed connection URL is (:class:`DatabaseURL`), its schemes and host check.

May import: the standard library and :mod:`skiplock.errors`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import quote, urlencode

from ..errors import ConfigurationError

__all__ = ["SCHEMES", "DatabaseURL", "check_host", "mask_password"]

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
