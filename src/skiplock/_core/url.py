"""Connection URLs: :func:`parse_url`.

May import: the standard library, :mod:`skiplock.errors`, :mod:`.dburl`, :mod:`.pgurl`.
"""

from __future__ import annotations

import os
from urllib.parse import parse_qsl, unquote, urlsplit

from ..errors import ConfigurationError
from .dburl import SCHEMES, DatabaseURL, check_host, mask_password
from .pgurl import parse_libpq_url

__all__ = ["SCHEMES", "DatabaseURL", "mask_password", "parse_url"]


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
        parsed = parse_libpq_url(url, scheme, shown)
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
