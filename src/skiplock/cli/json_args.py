"""The CLI's JSON arguments: strict JSON, else exit 2."""

from __future__ import annotations

import json
import math
from typing import Any

__all__ = ["CommandLineError", "json_arg", "json_or_text"]


class CommandLineError(Exception):
    """A bad command-line argument found after argparse's checks: exit 2."""


class _NotJSON(ValueError):
    pass


def _refuse_constant(name: str) -> Any:
    raise _NotJSON(f"{name} is not a JSON number (JSON has no NaN or Infinity)")


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise _NotJSON(f"{text:.40} is too large for a JSON number")
    return value


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:  # more digits than Python reads (sys.set_int_max_str_digits)
        raise _NotJSON(f"a number of {len(text)} digits is too long") from None


#: strict JSON: no NaN / Infinity (Python's json reads them, no database stores them), no
#: number that overflows to infinity
_STRICT = json.JSONDecoder(
    parse_constant=_refuse_constant, parse_float=_finite_float, parse_int=_int
)


def json_arg(text: str, what: str) -> Any:
    try:
        return _STRICT.decode(text)
    except _NotJSON as exc:
        raise CommandLineError(f"{what} {text!r:.60} is not JSON: {exc}") from None
    except RecursionError:
        raise CommandLineError(f"{what} is not JSON: it is nested too deep") from None
    except ValueError as exc:
        raise CommandLineError(f"{what} {text!r:.60} is not JSON ({exc})") from None


def json_or_text(text: str, what: str) -> Any:
    """An ARG: JSON where it parses, else the text; but one that looks like JSON (``{``,
    ``[``, ``"``, ``NaN``, a huge number) must be JSON.
    """
    try:
        return _STRICT.decode(text)
    except (_NotJSON, RecursionError):
        pass
    except ValueError:
        if text.lstrip()[:1] not in ("{", "[", '"'):
            return text
    return json_arg(text, what)  # raises, with the reason
