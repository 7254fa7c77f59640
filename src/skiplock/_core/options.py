"""URL query options: each dialect accepts a documented set; any other is refused."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigurationError

__all__ = ["Option", "check_options"]

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


@dataclass(frozen=True)
class Option:
    """One accepted URL option and its ``kind`` (int, bool, text, choice, addresses)."""

    kind: str
    choices: tuple[str, ...] = ()
    low: int = 0
    high: int = 86400

    def convert(self, name: str, value: str) -> Any:
        if self.kind == "int":
            text = value.strip()
            if not text.isdigit() or not self.low <= int(text) <= self.high:
                raise ConfigurationError(
                    f"the URL option {name}={value!r:.40} must be a whole number from "
                    f"{self.low} to {self.high}"
                )
            return int(text)
        if self.kind == "bool":
            if value.lower() in _TRUE:
                return True
            if value.lower() in _FALSE:
                return False
            raise ConfigurationError(f"the URL option {name}={value!r:.40} must be 1 or 0")
        if self.kind == "addresses":  # libpq's hostaddr: numeric addresses, one per host
            for piece in value.split(","):
                try:
                    ipaddress.ip_address(piece.strip())
                except ValueError:
                    if piece.strip():
                        raise ConfigurationError(
                            f"the URL option {name}={value!r:.60} must be IP addresses "
                            "(one per host, comma-separated), not host names"
                        ) from None
        if self.kind == "choice" and value not in self.choices:
            raise ConfigurationError(
                f"the URL option {name}={value!r:.40} must be one of {', '.join(self.choices)}"
            )
        if not value or "\x00" in value:
            raise ConfigurationError(f"the URL option {name} must not be empty")
        return value


INT = Option("int")
BOOL = Option("bool")
TEXT = Option("text")

#: refused on every database, with the reason
COMMON_REFUSED: Mapping[str, str] = {
    "autocommit": "skiplock commits its own transactions, and your rows commit with its "
    "fenced writes only inside one",
    "isolation_level": "claims run at READ COMMITTED (stricter levels deadlock or fail)",
    "transaction_isolation": "claims run at READ COMMITTED (stricter levels deadlock or fail)",
    "host": "it is part of the URL itself",
    "port": "it is part of the URL itself",
    "user": "it is part of the URL itself",
    "password": "it is part of the URL itself",
    "database": "it is part of the URL itself",
    "dbname": "it is part of the URL itself",
}


def check_options(
    product: str,
    given: Mapping[str, str],
    accepted: Mapping[str, Option],
    refused: Mapping[str, str],
) -> dict[str, Any]:
    """*given* converted by *accepted*; :class:`ConfigurationError` for a refused or unknown
    one."""
    out: dict[str, Any] = {}
    for name, value in given.items():
        reason = refused.get(name) or COMMON_REFUSED.get(name)
        if reason is not None:
            raise ConfigurationError(
                f"the URL option {name!r:.60} is not accepted for {product}: {reason}"
            )
        option = accepted.get(name)
        if option is None:
            raise ConfigurationError(
                f"unknown URL option {name!r:.60} for {product}; accepted: "
                f"{', '.join(sorted(accepted))} (see docs/getting-started.md, URL options)"
            )
        out[name] = option.convert(name, value)
    return out
