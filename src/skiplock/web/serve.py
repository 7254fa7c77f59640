"""``skiplock web``: the dashboard served by uvicorn, on the loopback interface unless
asked otherwise, and then only behind a password."""

from __future__ import annotations

import ipaddress
import logging

from ..errors import ConfigurationError
from .app import create_app

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


def check_host(host: str, auth: str | None) -> None:
    """Refuse to listen on anything but the loopback interface without a password: the
    dashboard shows every payload and can retry and cancel jobs."""
    if not is_loopback(host) and auth is None:
        raise ConfigurationError(
            f"refusing to serve the dashboard on {host!r} without a password: anyone who "
            "reaches that address could read every job and retry or cancel them. Add "
            "--auth USER:PASSWORD (and put TLS in front), or keep the default 127.0.0.1"
        )


def serve(
    url: str,
    *,
    table: str | None = None,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    auth: str | None = None,
    read_only: bool = False,
) -> None:
    """Serve the dashboard until interrupted (uvicorn, one process)."""
    import uvicorn

    check_host(host, auth)
    app = create_app(url, table=table, auth=auth, read_only=read_only)
    log.warning(
        "skiplock dashboard on http://%s:%d/%s%s",
        f"[{host}]" if ":" in host else host,
        port,
        " (read-only)" if read_only else "",
        " (HTTP Basic)" if auth else "",
    )
    uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False)
