"""``skiplock web``: the dashboard served by uvicorn."""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Iterable

from .._core.checks import integer
from ..errors import ConfigurationError
from .app import LOOPBACK_NAMES, create_app, host_patterns

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "check_host", "serve"]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8089

log = logging.getLogger("skiplock.web")


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_host(
    host: str,
    auth: str | None,
    *,
    port: int = DEFAULT_PORT,
    allowed_hosts: Iterable[str] | None = None,
) -> tuple[str, ...] | None:
    """Refuse to listen beyond the loopback interface without a password. Returns the Host
    names to answer. Raises ConfigurationError for a bad port, or *allowed_hosts* without
    *auth*.
    """
    integer(port, "the port", 1, 65535)
    if not is_loopback(host) and auth is None:
        raise ConfigurationError(
            f"refusing to serve the dashboard on {host!r} without a password: anyone who "
            "reaches that address could read every job and retry or cancel them. Add "
            "--auth USER:PASSWORD (and put TLS in front), or keep the default 127.0.0.1"
        )
    if auth is not None:
        return host_patterns(allowed_hosts)
    if allowed_hosts is not None:
        raise ConfigurationError(
            "--allowed-hosts needs --auth: without a password the dashboard answers only "
            "the loopback names (localhost, 127.0.0.1, [::1]), so that a page whose name "
            "rebinds to this machine cannot read it"
        )
    own = host.lower() if ":" not in host else f"[{host.strip('[]').lower()}]"
    return tuple(dict.fromkeys((*LOOPBACK_NAMES, own)))


def serve(
    url: str,
    *,
    table: str | None = None,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    auth: str | None = None,
    read_only: bool = False,
    allowed_hosts: Iterable[str] | None = None,
) -> None:
    """Serve the dashboard until interrupted (uvicorn, one process)."""
    import uvicorn

    hosts = check_host(host, auth, port=port, allowed_hosts=allowed_hosts)
    app = create_app(url, table=table, auth=auth, read_only=read_only, allowed_hosts=hosts)
    log.info(
        "skiplock dashboard on http://%s:%d/%s%s",
        f"[{host}]" if ":" in host else host,
        port,
        " (read-only)" if read_only else "",
        " (HTTP Basic)" if auth else "",
    )
    uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False)
