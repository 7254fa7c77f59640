"""Argument checks: every bad input becomes skiplock's own error, before anything is written.
The single checks first; then the keywords of the queue's enqueue, claim and list methods,
checked once into frozen objects."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from itertools import accumulate
from typing import Any, TypedDict

from ..errors import ConfigurationError, PayloadError
from .params import JobInsertParams, JobListParams

__all__ = [
    "MAX_CONTEXT_BYTES",
    "MAX_DEPTH",
    "MAX_ERROR",
    "MAX_HEADERS_BYTES",
    "MAX_NAME",
    "STATUSES",
    "TEN_YEARS",
    "ClaimKeywords",
    "ClaimOptions",
    "ContextHeaders",
    "EnqueueKeywords",
    "EnqueueManyKeywords",
    "EnqueueOptions",
    "ListOptions",
    "dumps",
    "error_text",
    "headers_json",
    "integer",
    "loads",
    "milliseconds",
    "queue_names",
    "run_at_or_delay",
    "seconds",
    "seconds_or_none",
    "text",
]

#: the statuses a job can be in (public as skiplock.job.STATUSES)
STATUSES = ("pending", "running", "done", "failed", "cancelled", "waiting")

MAX_NAME = 255
MAX_ERROR = 8000
#: the deepest nesting of lists and objects a payload or result may have. MySQL's JSON
#: functions stop at 100 levels, and a fixed bound (not Python's recursion limit, which
#: depends on how deep the caller's stack already is) means a payload accepted once is
#: accepted from any caller and decoded by any worker.
MAX_DEPTH = 100

#: one encoder for every payload: ``json.dumps`` with options builds a new one per call
_ENCODER = json.JSONEncoder(allow_nan=False, ensure_ascii=True, separators=(",", ":"))


#: the longest duration accepted anywhere (delay, lease, retry_in, prune age, worker times):
#: beyond it datetimes and the threading module's timeouts overflow
TEN_YEARS = 10 * 365 * 86400.0


def integer(value: object, what: str, low: int, high: int = 2**31 - 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ConfigurationError(
            f"{what} must be an integer from {low} to {high}, not {value!r:.80}"
        )
    return value


def seconds(
    value: object,
    what: str,
    *,
    low: float = 0.0,
    strict: bool = False,
    high: float = TEN_YEARS,
) -> float:
    """A finite number of seconds from *low* (excluded when *strict*) to *high*."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigurationError(f"{what} must be a number of seconds, not {value!r:.80}")
    # float(10**400) raises OverflowError: compare a huge int as an int first.
    number = math.inf if isinstance(value, int) and abs(value) > 2**60 else float(value)
    if not math.isfinite(number) or number < low or (strict and number == low) or number > high:
        bound = "greater than" if strict else "at least"
        most = "ten years" if high == TEN_YEARS else f"{high}"
        raise ConfigurationError(
            f"{what} must be a number of seconds {bound} {low} and at most {most}, "
            f"not {value!r:.80}"
        )
    return number


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


# -- the keywords of enqueue, claim and list ------------------------------------------------

#: the largest ``key_concurrency`` (a claim counts a key's running jobs for each of its rows)
MAX_KEY_CONCURRENCY = 10_000
_MAX_ID = 2**63 - 1
#: the most a job's headers may take, as stored (their JSON text, UTF-8)
MAX_HEADERS_BYTES = 8192
#: the most the trace context a tracing integration adds to a job's headers may take, on
#: top of the caller's MAX_HEADERS_BYTES, so that headers that fit untraced fit traced
#: too: twice W3C baggage's own limit (8192 bytes), room for traceparent and tracestate
MAX_CONTEXT_BYTES = 16384


class ContextHeaders(dict[str, str]):
    """A job's headers plus those a tracing integration *added* (counted apart)."""

    def __init__(self, given: Mapping[str, str], added: Mapping[str, str]) -> None:
        super().__init__(given)
        self.update(added)
        self.added = frozenset(added)


class _EnqueueShared(TypedDict, total=False):
    queue: str
    priority: int
    run_at: datetime | None
    delay: float | None
    max_attempts: int
    key: str | None
    key_concurrency: int | None
    key_rate: tuple[int, float] | None
    headers: Mapping[str, str] | None
    dedupe_for: float | None
    debounce: float | None
    after: Sequence[int] | None
    after_failure: str


class EnqueueManyKeywords(_EnqueueShared, total=False):
    """The keywords of ``enqueue_many`` but ``conn``."""

    dedupe_keys: Sequence[str | None] | None


class EnqueueKeywords(_EnqueueShared, total=False):
    """The keywords of ``enqueue`` but ``conn``."""

    dedupe_key: str | None


class ClaimKeywords(TypedDict, total=False):
    """The keywords of ``claim`` but ``conn``."""

    queues: Sequence[str] | str
    limit: int
    lease: float


@dataclass(frozen=True, slots=True)
class EnqueueOptions:
    """How a job is enqueued, checked."""

    queue: str
    priority: int
    max_attempts: int
    #: in UTC; None: now + ``delay_ms`` on the database's clock
    run_at: datetime | None
    delay_ms: int
    #: ``key``: jobs of one key start in the order they were enqueued
    order_key: str | None
    #: ``key_concurrency`` (None: 1, strict order, as older releases wrote it)
    key_limit: int | None
    dedupe_key: str | None
    #: the job's headers as stored (JSON text of a str -> str object); None: none
    headers: str | None = None
    #: ``dedupe_for`` in milliseconds (0: dedupe while active only)
    dedupe_ms: int = 0
    #: ``debounce`` in milliseconds (None: no debounce)
    debounce_ms: int | None = None
    #: ``after``: the parents' ids (deduplicated, in the order given); None: no parents
    after: tuple[int, ...] | None = None
    #: ``after_failure="run"``: run once the parents end, whatever their end
    run_after_failure: bool = False
    #: ``key_rate=(N, per)``: N and per in milliseconds (None: no rate for the key)
    key_rate: tuple[int, int] | None = None
    #: a workflow's: the jobs get ``has_children`` as they are written, since the
    #: workflow enqueues a child of them next, in the same transaction
    children: bool = False
    #: a workflow's: ``after`` names jobs this transaction wrote with ``children``
    #: (they exist, are marked and have not ended), so they are neither locked nor read
    own_parents: bool = False

    @classmethod
    def check(
        cls,
        *,
        queue: object,
        priority: object,
        max_attempts: object,
        run_at: object = None,
        delay: object = None,
        key: object = None,
        key_concurrency: object = None,
        key_rate: object = None,
        dedupe_key: object = None,
        headers: object = None,
        dedupe_for: object = None,
        debounce: object = None,
        many_keys: bool = False,
        after: object = None,
        after_failure: object = "cancel",
    ) -> EnqueueOptions:
        """The public method's keywords (None: not given), checked. Raises
        :class:`ConfigurationError` for a bad value or a combination that cannot hold
        (``run_at`` with ``delay``, ``key_rate`` without ``key``, ``debounce`` without
        ``dedupe_key``, …)."""
        when, delay_ms = run_at_or_delay(run_at, delay)
        keyed = dedupe_key is not None or many_keys
        dedupe_ms, debounce_ms = _window(keyed, dedupe_for, debounce, run_at, delay)
        parents = _after(after, after_failure, key, dedupe_key)
        if parents is not None and many_keys:
            raise ConfigurationError(
                "after cannot be given with dedupe_keys: a job that waits for its parents "
                "is not deduplicated"
            )
        return cls(
            queue=text(queue, "queue"),
            priority=integer(priority, "priority", -(2**31)),
            max_attempts=integer(max_attempts, "max_attempts", 1),
            run_at=when,
            delay_ms=delay_ms,
            order_key=None if key is None else text(key, "key"),
            key_limit=_key_limit(key, key_concurrency),
            dedupe_key=None if dedupe_key is None else text(dedupe_key, "dedupe_key"),
            headers=headers_json(headers),
            dedupe_ms=dedupe_ms,
            debounce_ms=debounce_ms,
            after=parents,
            run_after_failure=after_failure == "run",
            key_rate=_key_rate(key, key_rate),
        )

    def params(self) -> JobInsertParams:
        """What every job of the enqueue shares (the caller adds a job's own)."""
        return JobInsertParams(
            queue=self.queue,
            priority=self.priority,
            max_attempts=self.max_attempts,
            run_at=self.run_at,
            delay_ms=self.delay_ms,
            order_key=self.order_key,
            key_limit=self.key_limit,
            headers=self.headers,
            key_rate=None if self.key_rate is None else self.key_rate[0],
            key_rate_ms=None if self.key_rate is None else self.key_rate[1],
        )


def headers_json(headers: object) -> str | None:
    """*headers* checked and encoded as JSON text (None when empty). Raises
    :class:`ConfigurationError` for a mapping that is not text to text, or over
    :data:`MAX_HEADERS_BYTES`."""
    if headers is None:
        return None
    if not isinstance(headers, Mapping):
        raise ConfigurationError(
            f"headers must be a dict of str to str, not {type(headers).__name__}"
        )
    if not headers:
        return None
    for k, v in headers.items():
        if not isinstance(k, str) or not k:
            raise ConfigurationError(f"a header's name must be a non-empty str, not {k!r:.80}")
        if not isinstance(v, str):
            raise ConfigurationError(
                f"header {k!r:.80} must have a str value, not {type(v).__name__}"
            )
    encoded, size = _encoded(headers)
    added = headers.added if isinstance(headers, ContextHeaders) else frozenset()
    if added:
        own = {k: v for k, v in headers.items() if k not in added}
        size = _encoded(own)[1] if own else 0
        context = _encoded({k: v for k, v in headers.items() if k in added})[1]
        if context > MAX_CONTEXT_BYTES:
            raise ConfigurationError(
                f"the trace context added to the headers takes {context} bytes as JSON; at "
                f"most {MAX_CONTEXT_BYTES} are allowed: keep the baggage smaller"
            )
    if size > MAX_HEADERS_BYTES:
        raise ConfigurationError(
            f"headers take {size} bytes as JSON; at most {MAX_HEADERS_BYTES} are allowed: "
            "keep ids and trace context in them, and data in the payload"
        )
    return encoded


def _encoded(headers: Mapping[str, str]) -> tuple[str, int]:
    encoded = json.dumps(dict(headers), ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    try:
        return encoded, len(encoded.encode("utf-8"))
    except UnicodeEncodeError:
        raise ConfigurationError("headers must be valid Unicode text (a lone surrogate?)") from None


def _window(
    keyed: bool, dedupe_for: object, debounce: object, run_at: object, delay: object
) -> tuple[int, int | None]:
    if dedupe_for is None and debounce is None:
        return 0, None
    what = "dedupe_for" if debounce is None else "debounce"
    if not keyed:
        raise ConfigurationError(
            f"{what} applies to a dedupe_key: pass dedupe_key=... with it "
            "(dedupe_keys=[...] on enqueue_many)"
        )
    if dedupe_for is not None and debounce is not None:
        raise ConfigurationError(
            "pass dedupe_for (one job per key for a while) or debounce (the pending job takes "
            "the newest payload), not both"
        )
    if debounce is None:
        return max(1, milliseconds(dedupe_for, "dedupe_for", low=0.001)), None
    if run_at is not None or delay is not None:
        raise ConfigurationError(
            "debounce sets the job's due time (now + debounce): leave out run_at and delay"
        )
    return 0, milliseconds(debounce, "debounce")


def _key_limit(key: object, key_concurrency: object) -> int | None:
    if key_concurrency is None:
        return None
    n = integer(key_concurrency, "key_concurrency", 1, MAX_KEY_CONCURRENCY)
    if key is None:
        raise ConfigurationError("key_concurrency limits the jobs of one key: pass key=... with it")
    return None if n == 1 else n


def _key_rate(key: object, key_rate: object) -> tuple[int, int] | None:
    if key_rate is None:
        return None
    n, per = rate(key_rate, "key_rate")
    if key is None:
        raise ConfigurationError(
            "key_rate limits how fast the jobs of one key start: pass key=... with it"
        )
    return n, max(1, round(per * 1000))


def _after(
    after: object, after_failure: object, key: object, dedupe_key: object
) -> tuple[int, ...] | None:
    if after_failure not in ("cancel", "run"):
        raise ConfigurationError(
            f'after_failure must be "cancel" (the default) or "run", not {after_failure!r:.80}'
        )
    if after is None:
        return None
    if isinstance(after, (str, bytes)) or not isinstance(after, (Sequence, set, frozenset)):
        raise ConfigurationError(
            f"after must be a list of job ids, not {type(after).__name__}: after=[id, ...]"
        )
    ids = tuple(dict.fromkeys(integer(i, "after: a job id", 1, _MAX_ID) for i in after))
    if not ids:
        raise ConfigurationError("after=[] names no job: leave it out, or name the parents")
    if dedupe_key is not None or key is not None:
        raise ConfigurationError(
            "after cannot be combined with dedupe_key or key: a waiting job holds neither"
        )
    return ids


@dataclass(frozen=True, slots=True)
class ClaimOptions:
    """What a claim asks for, checked."""

    queues: tuple[str, ...]
    limit: int
    lease_ms: int

    @classmethod
    def check(cls, *, queues: object, limit: object, lease: object) -> ClaimOptions:
        """Raises :class:`ConfigurationError` for no queue, a bad name, limit or lease."""
        return cls(
            queues=tuple(queue_names(queues)),
            limit=integer(limit, "limit", 1, 10_000),
            lease_ms=milliseconds(lease, "lease", low=0.001),
        )


@dataclass(frozen=True, slots=True)
class ListOptions:
    """Which jobs ``list_jobs`` reads, checked (None: every status, every queue)."""

    statuses: tuple[str, ...] | None
    queue: str | None
    limit: int
    before_id: int | None
    #: an App task's name (the payload's ``task``); None: every job
    task: str | None = None

    @classmethod
    def check(
        cls,
        *,
        status: object,
        queue: object,
        limit: object,
        before_id: object,
        task: object = None,
    ) -> ListOptions:
        """Raises :class:`ConfigurationError` for a bad status, queue, task, limit or id."""
        statuses = [status] if isinstance(status, str) else status
        if statuses is not None and (
            not isinstance(statuses, Sequence)
            or not statuses
            or any(s not in STATUSES for s in statuses)
        ):
            raise ConfigurationError(
                f"status must be one or more of {', '.join(STATUSES)}, not {status!r:.80}"
            )
        return cls(
            statuses=None if statuses is None else tuple(dict.fromkeys(statuses)),
            queue=None if queue is None else text(queue, "queue"),
            limit=integer(limit, "limit", 1, 1000),
            before_id=None if before_id is None else integer(before_id, "before_id", 1, _MAX_ID),
            task=None if task is None else text(task, "task"),
        )

    def params(self) -> JobListParams:
        before = _MAX_ID if self.before_id is None else self.before_id
        return JobListParams(self.statuses, self.queue, self.limit, before, self.task)
