"""Argument checks: every bad input becomes skiplock's own error, before anything is written."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime, timezone
from itertools import accumulate
from typing import Any

# the numeric checks live with the errors, the lowest layer, so that an exception built by a
# user (Snooze) checks its arguments with them too; here they are re-exported
from ..errors import TEN_YEARS, ConfigurationError, PayloadError
from ..errors import check_integer as integer
from ..errors import check_seconds as seconds

__all__ = [
    "MAX_DEPTH",
    "MAX_ERROR",
    "MAX_NAME",
    "TEN_YEARS",
    "dumps",
    "error_text",
    "integer",
    "loads",
    "milliseconds",
    "queue_names",
    "run_at_or_delay",
    "seconds",
    "seconds_or_none",
    "text",
]

MAX_NAME = 255
MAX_ERROR = 8000
#: the deepest nesting of lists and objects a payload or result may have. MySQL's JSON
#: functions stop at 100 levels, and a fixed bound (not Python's recursion limit, which
#: depends on how deep the caller's stack already is) means a payload accepted once is
#: accepted from any caller and decoded by any worker.
MAX_DEPTH = 100

#: one encoder for every payload: ``json.dumps`` with options builds a new one per call
_ENCODER = json.JSONEncoder(allow_nan=False, ensure_ascii=True, separators=(",", ":"))


def _made_once() -> Callable[[Any], str]:
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return _ENCODER.encode
    try:
        encoder = make(
            None, _ENCODER.default, json.encoder.encode_basestring_ascii, None, ":", ",",
            False, False, False,
        )  # fmt: skip

        def encode(value: Any) -> str:
            return "".join(encoder(value, 0))

        sample = {"a": [1, -2.5, 1e300, None, True, '\u00e9\n"', {"": -0.0}], "b": 10**30}
        same = encode(sample) == _ENCODER.encode(sample) and encode("\u2028") == '"\\u2028"'
    except Exception:  # another json's C encoder: take the public one
        return _ENCODER.encode
    try:
        encode(math.nan)
    except ValueError:  # refused, as by _ENCODER
        return encode if same else _ENCODER.encode
    except Exception:
        pass
    return _ENCODER.encode


_ENCODE = _made_once()
_DECODER = json.JSONDecoder()
#: the decoder's C scanner: one JSON value from an index, (value, end); StopIteration when
#: none starts there
_SCAN: Callable[[str, int], tuple[Any, int]] = _DECODER.scan_once  # type: ignore[attr-defined]
_STR = frozenset({str})
_SCALARS = frozenset({str, int, float, bool, type(None)})
_CONTAINERS = (dict, list, tuple)


def _shape_error(value: Any) -> str | None:
    if not isinstance(value, _CONTAINERS):
        return None
    level: list[Any] = [value]  # breadth first: one list per level of nesting
    for _ in range(MAX_DEPTH):
        below: list[Any] = []
        for item in level:
            if isinstance(item, dict):
                if not _STR.issuperset(map(type, item)):  # map(type, …) runs at C speed
                    for key in item:
                        if not isinstance(key, str):
                            return f"it has a dict key that is not a string ({key!r:.80})"
                children: Iterable[Any] = item.values()
            else:
                children = item
            if not _SCALARS.issuperset(map(type, children)):
                below += [c for c in children if isinstance(c, _CONTAINERS)]
        if not below:
            return None
        level = below
    return f"it is nested more than {MAX_DEPTH} levels deep"


def dumps(value: Any, what: str) -> str:
    """*value* as JSON text; :class:`PayloadError` if it cannot be."""
    try:
        reason = _shape_error(value)
        if reason is None:
            return _ENCODE(value)
    except (TypeError, ValueError, RecursionError) as exc:
        reason = f"{type(exc).__name__}: {str(exc)[:200]}"
    raise PayloadError(
        f"the {what} is not JSON ({reason}); use dicts with string keys, lists, strings, "
        f"finite numbers, booleans and None, nested at most {MAX_DEPTH} levels"
    ) from None


#: a JSON string (unrolled: no backtracking per character), and one bracket
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_BRACKET = re.compile(r"[][{}]")
_DEPTH_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def _too_deep(stored: str) -> bool:
    if len(stored) <= 2 * MAX_DEPTH + 1 or stored.count("[") + stored.count("{") <= MAX_DEPTH:
        return False
    if '"' in stored:
        stored = _STRING.sub("", stored)
    steps = map(_DEPTH_STEP.__getitem__, _BRACKET.findall(stored))
    return max(accumulate(steps), default=0) > MAX_DEPTH


def loads(stored: Any, what: str) -> Any:
    """Decode JSON read from the database."""
    if stored is None:
        return None
    try:
        if not isinstance(stored, str):  # bytes from some drivers
            stored = bytes(stored).decode("utf-8")
        if _too_deep(stored):
            raise ValueError(f"it is nested more than {MAX_DEPTH} levels deep")
        try:  # the C scanner alone (a claim decodes one payload per job): 0.17 against 0.64 µs
            value, end = _SCAN(stored, 0)
        except StopIteration:  # leading whitespace or not JSON: decode() tells which
            end = -1
        if end == len(stored):
            return value
        return _DECODER.decode(stored)  # trailing whitespace is allowed, anything else not
    except (ValueError, RecursionError, TypeError) as exc:
        raise PayloadError(
            f"the stored {what} cannot be decoded ({type(exc).__name__}: {str(exc)[:200]})"
        ) from None


def text(value: object, what: str) -> str:
    """A queue name, dedupe key, …: non-empty printable text of at most MAX_NAME chars."""
    if not isinstance(value, str) or not value:
        raise ConfigurationError(f"{what} must be a non-empty string, not {value!r:.80}")
    if len(value) > MAX_NAME:
        raise ConfigurationError(f"{what} is longer than {MAX_NAME} characters")
    if "\x00" in value or not value.isprintable():
        raise ConfigurationError(f"{what} {value!r:.80} holds control characters")
    if value[-1] == " ":
        # MySQL and MariaDB compare 'a' and 'a ' as equal (PAD SPACE collations): refused
        # everywhere, so that two names never mean one queue or one key on some databases.
        raise ConfigurationError(
            f"{what} {value!r:.80} ends in a space; strip it (MySQL and MariaDB would treat "
            "it as the same name without the space)"
        )
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ConfigurationError(f"{what} {value!r:.80} is not valid Unicode text") from None
    return value


def seconds_or_none(
    value: object, what: str, *, low: float = 0.0, strict: bool = False
) -> float | None:
    """None (no limit), or :func:`seconds`: a timeout."""
    return None if value is None else seconds(value, what, low=low, strict=strict)


def milliseconds(value: object, what: str, *, low: float = 0.0) -> int:
    return round(seconds(value, what, low=low) * 1000)


def error_text(error: object) -> str:
    text = f"{type(error).__name__}: {error}" if isinstance(error, BaseException) else str(error)
    # Databases refuse NUL and lone surrogates in text columns; keep what can be kept.
    text = text.replace("\x00", "\\x00").encode("utf-8", "backslashreplace").decode("utf-8")
    return text if len(text) <= MAX_ERROR else text[: MAX_ERROR - 3] + "..."


def run_at_or_delay(run_at: object, delay: object) -> tuple[datetime | None, int]:
    """``(run_at in UTC or None, delay in ms)``."""
    if run_at is not None and delay is not None:
        raise ConfigurationError("give run_at or delay, not both")
    if run_at is not None:
        if not isinstance(run_at, datetime) or run_at.tzinfo is None:
            raise ConfigurationError(
                "run_at must be a timezone-aware datetime, e.g. datetime.now(timezone.utc)"
            )
        try:
            return run_at.astimezone(timezone.utc), 0
        except OverflowError:  # datetime.max at UTC-5 is past year 9999 in UTC
            raise ConfigurationError(
                f"run_at {run_at.isoformat()} is out of range in UTC (years 1 to 9999)"
            ) from None
    return None, 0 if delay is None else milliseconds(delay, "delay")


def queue_names(queues: object) -> list[str]:
    if isinstance(queues, str):
        queues = (queues,)
    if not isinstance(queues, Iterable):
        raise ConfigurationError(f"queues must be a sequence of queue names, not {queues!r:.80}")
    names = [text(q, "a queue name") for q in queues]
    if not names:
        raise ConfigurationError("queues must name at least one queue")
    return list(dict.fromkeys(names))


def queue_limits(limits: object) -> dict[str, int]:
    """``queue_limits``: a mapping of queue name to a limit of at least 1 (None: none)."""
    if limits is None:
        return {}
    if not isinstance(limits, Mapping):
        raise ConfigurationError(
            f"queue_limits must be a dict of queue name to a number, not {limits!r:.80}"
        )
    return {
        text(k, "queue name"): integer(v, f"queue_limits[{k!r:.80}]", 1) for k, v in limits.items()
    }


#: the longest rate-limit window: a week (SQL Server's DATEADD takes an int of milliseconds)
MAX_RATE_WINDOW = 7 * 86400.0


def rate(value: object, what: str) -> tuple[int, float]:
    """One rate limit ``(N, per)``: at most N claims in any *per* seconds."""
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise ConfigurationError(
            f"{what} must be a pair (N, per): at most N jobs claimed in any window of per "
            f"seconds, e.g. (50, 1.0); not {value!r:.80}"
        )
    n = integer(value[0], f"{what}'s N (jobs per window)", 1)
    per = seconds(value[1], f"{what}'s per (the window)", low=0.001, high=MAX_RATE_WINDOW)
    return n, per


def rate_limits(limits: object) -> dict[str, tuple[int, float]]:
    """``rate_limits``: a mapping of queue name to ``(N, per)`` (see :func:`rate`; None:
    none)."""
    if limits is None:
        return {}
    if not isinstance(limits, Mapping):
        raise ConfigurationError(
            "rate_limits must be a dict of queue name to a pair (N, per seconds), e.g. "
            f'{{"api": (50, 1.0)}}; not {limits!r:.80}'
        )
    return {text(k, "queue name"): rate(v, f"rate_limits[{k!r:.80}]") for k, v in limits.items()}
