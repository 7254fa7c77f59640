"""Queue and AsyncQueue (and their transactions) are not twins kept by hand: both are thin
over skiplock._core.calls. This checks that they have the same public methods with the same
signatures, that every AsyncQueue method is a coroutine, and that each queue method's body
is one statement (the call of its builder in skiplock._core.calls), so no logic can live in
one and not the other."""

from __future__ import annotations

import ast
import inspect
import textwrap
from typing import Any

import pytest

import skiplock

PAIRS = [(skiplock.Queue, skiplock.AsyncQueue), (skiplock.Transaction, skiplock.AsyncTransaction)]
#: sync-only: a new driver connection (the caller's to own) has no asyncio twin
SYNC_ONLY = {"connection"}
#: async-only: the sync Queue on the same URL that AsyncWorker does its I/O with
ASYNC_ONLY = {"sync_queue"}
#: plain methods on both queues: a context manager, and a count read without I/O
NOT_COROUTINES = {"transaction", "pool_stats"}
#: the queue methods whose bodies must be one line over skiplock._core.calls
#: (install and migrate run the migration, on a connection of its own: not a Call)
ONE_LINE = {
    "schema_version",
    "uninstall",
    "cancel",
    "mark_cancelled",
    "list_jobs",
    "enqueue",
    "enqueue_many",
    "claim",
    "heartbeat",
    "complete",
    "complete_many",
    "fail",
    "release",
    "get",
    "stats",
    "ping",
}


def public(cls: type) -> dict[str, Any]:
    """The public methods of *cls*, its bases' included (``transaction`` is the session's,
    generated: skiplock._shell.session_async → skiplock._shell.session)."""
    found: dict[str, Any] = {}
    for klass in reversed(cls.__mro__[:-1]):
        found.update((n, f) for n, f in vars(klass).items() if not n.startswith("_"))
    return {n: f for n, f in found.items() if callable(f)}


@pytest.mark.parametrize(("sync", "aio"), PAIRS, ids=["Queue", "Transaction"])
def test_same_methods_and_signatures(sync: type, aio: type) -> None:
    s, a = public(sync), public(aio)
    assert set(s) - SYNC_ONLY == set(a) - ASYNC_ONLY
    for name, fn in a.items():
        if name in ASYNC_ONLY:
            continue
        assert (
            inspect.signature(fn).parameters.keys() == inspect.signature(s[name]).parameters.keys()
        ), name
        assert (
            str(inspect.signature(fn)).split(" -> ")[0]
            == str(inspect.signature(s[name])).split(" -> ")[0]
        ), name
        if name not in NOT_COROUTINES:
            assert inspect.iscoroutinefunction(fn), name
        if name != "adapt":  # what each accepts differs, and its docstring says so
            assert fn.__doc__ == s[name].__doc__, name


def _body(fn: Any) -> list[ast.stmt]:
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    node = tree.body[0]
    assert isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    body = node.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    return body


@pytest.mark.parametrize("cls", [skiplock.Queue, skiplock.AsyncQueue])
@pytest.mark.parametrize("name", sorted(ONE_LINE))
def test_each_method_is_one_call_of_its_builder(cls: type, name: str) -> None:
    body = _body(vars(cls)[name])
    assert len(body) == 1 and isinstance(body[0], ast.Return), name
    calls = [
        n
        for n in ast.walk(body[0])
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "calls"
    ]
    assert [c.attr for c in calls] == [name], name


def _keywords(fn: Any) -> dict[str, str]:
    """The keyword-only parameters of *fn* and their annotations, ``conn`` aside."""
    return {
        n: str(p.annotation)
        for n, p in inspect.signature(fn).parameters.items()
        if p.kind is p.KEYWORD_ONLY and n != "conn"
    }


def _typed(typed_dict: Any) -> dict[str, str]:
    """A TypedDict's keys (its bases' too) and their annotations, as text."""
    return {n: getattr(t, "__forward_arg__", t) for n, t in typed_dict.__annotations__.items()}


@pytest.mark.parametrize("name", ["enqueue", "enqueue_many", "claim"])
def test_a_transactions_keywords_are_the_queues(name: str) -> None:
    """A transaction's enqueue/claim forward their keywords (typed as a TypedDict of
    skiplock._core.checks) to the queue's: the TypedDict names exactly the queue's
    keywords but ``conn``, with the same types."""
    from skiplock._core import checks

    fn = getattr(skiplock.Transaction, name)
    (options,) = [p for p in inspect.signature(fn).parameters.values() if p.kind is p.VAR_KEYWORD]
    typed = str(options.annotation).removeprefix("Unpack[").removesuffix("]")
    assert _typed(getattr(checks, typed)) == _keywords(getattr(skiplock.Queue, name))


def test_the_constructors_take_the_keywords_of_queue_settings() -> None:
    """``connect``, ``Queue``, ``connect_async`` and ``AsyncQueue`` forward their keywords
    to ``QueueSettings.check``, the one place they are written with their defaults; the
    TypedDict that types them names the same keywords with the same types."""
    from skiplock._shell.settings import QueueKeywords, QueueSettings

    assert _typed(QueueKeywords) == _keywords(QueueSettings.check)
    constructors = (skiplock.connect, skiplock.Queue, skiplock.connect_async, skiplock.AsyncQueue)
    for fn in constructors:
        settings = inspect.signature(fn).parameters["settings"]
        assert str(settings.annotation) == "Unpack[QueueKeywords]", fn


#: the adapters' methods written twice (a driver's sync and asyncio connections differ, so
#: the modules are not generated) that must stay the same with ``await`` taken away
ADAPTER_TWINS = ("run", "run_with_caller_conn")


@pytest.mark.parametrize("name", ADAPTER_TWINS)
def test_the_async_adapter_loop_is_the_sync_one_awaited(name: str) -> None:
    from skiplock.drivers.base import Adapter
    from skiplock.drivers.base_async import AsyncAdapter

    from .scripts import load_script

    transform = load_script("async_to_sync").transform

    def body(source: str) -> str:
        fn = ast.parse(textwrap.dedent(source)).body[0]
        assert isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef)
        stmts = fn.body[1:] if ast.get_docstring(fn) else fn.body
        return "\n".join(ast.dump(s) for s in stmts)

    aio = inspect.getsource(getattr(AsyncAdapter, name))
    sync = inspect.getsource(getattr(Adapter, name))
    assert body(transform(textwrap.dedent(aio))) == body(sync), (
        f"AsyncAdapter.{name} is no longer Adapter.{name} awaited: change both"
    )
