"""Middleware: ``mw(job, call_next)`` functions around every handler call, the first outermost
(``async def`` around an ``async def`` handler). The worker's layers and the :data:`INSTRUMENTS`
run outside them."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

from .._core.job import Job
from ..errors import ConfigurationError
from .aio import is_async_handler

__all__ = [
    "INSTRUMENTS",
    "Layer",
    "Middleware",
    "add_instrument",
    "chain",
    "check",
    "remove_instrument",
]

Middleware = Callable[[Job, Callable[[Job], Any]], Any]
AsyncMiddleware = Callable[[Job, Callable[[Job], Awaitable[Any]]], Awaitable[Any]]


class Layer(Protocol):
    """A part of skiplock run around handlers, sync and async."""

    def around(self, job: Job, call_next: Callable[[Job], Any]) -> Any: ...

    async def around_async(self, job: Job, call_next: Callable[[Job], Awaitable[Any]]) -> Any: ...


#: process-wide layers (tracing), outermost first; replaced whole, never changed in place,
#: so a running worker reads one consistent tuple per job
INSTRUMENTS: tuple[Layer, ...] = ()


def add_instrument(layer: Layer) -> None:
    """Run *layer* around every handler of this process."""
    global INSTRUMENTS
    INSTRUMENTS = (*INSTRUMENTS, layer)


def remove_instrument(layer: Layer) -> None:
    global INSTRUMENTS
    INSTRUMENTS = tuple(x for x in INSTRUMENTS if x is not layer)


def check(middleware: object, *, is_async: bool) -> tuple[Middleware, ...]:
    """*middleware*, checked against the handler; else ConfigurationError."""
    if middleware is None:
        return ()
    if isinstance(middleware, (str, bytes)) or not isinstance(middleware, Sequence):
        raise ConfigurationError(
            "middleware must be a list of functions mw(job, call_next), not "
            f"{type(middleware).__name__}"
        )
    for mw in middleware:
        if not callable(mw):
            raise ConfigurationError(
                f"middleware must be functions mw(job, call_next); {mw!r:.80} is not callable"
            )
        name = getattr(mw, "__qualname__", repr(mw))
        if is_async and not is_async_handler(mw):
            raise ConfigurationError(
                f"middleware {name} is not an async def, but the handler is: around an async "
                "handler write `async def mw(job, call_next): return await call_next(job)`"
            )
        if not is_async and is_async_handler(mw):
            raise ConfigurationError(
                f"middleware {name} is an async def, but the handler is sync: use a sync "
                "middleware (or an async handler on an AsyncWorker)"
            )
        _takes_two(mw, name)
    return tuple(middleware)


def _takes_two(mw: Callable[..., Any], name: str) -> None:
    try:
        inspect.signature(mw).bind(None, None)
    except TypeError:
        raise ConfigurationError(
            f"middleware {name} must take two arguments: (job, call_next)"
        ) from None
    except ValueError:  # no signature to read (a builtin): let it be
        pass


def chain(
    handler: Callable[[Job], Any],
    middleware: Sequence[Middleware],
    layers: Sequence[Layer] = (),
) -> Callable[[Job], Any]:
    """The handler wrapped in *middleware*, *layers* and :data:`INSTRUMENTS`."""
    if is_async_handler(handler):
        inner_async: Callable[[Job], Awaitable[Any]] = handler
        for mw in reversed(middleware):
            inner_async = _async_step(mw, inner_async)
        for layer in reversed(layers):
            inner_async = _async_step(layer.around_async, inner_async)
        core_async = inner_async

        async def run_async(job: Job) -> Any:
            outer = INSTRUMENTS
            if not outer:
                return await core_async(job)
            call = core_async
            for layer in reversed(outer):
                call = _async_step(layer.around_async, call)
            return await call(job)

        return run_async

    inner: Callable[[Job], Any] = handler
    for mw in reversed(middleware):
        inner = _step(mw, inner)
    for layer in reversed(layers):
        inner = _step(layer.around, inner)
    core = inner

    def run(job: Job) -> Any:
        outer = INSTRUMENTS
        if not outer:
            return core(job)
        call = core
        for layer in reversed(outer):
            call = _step(layer.around, call)
        return call(job)

    return run


def _step(mw: Middleware, call_next: Callable[[Job], Any]) -> Callable[[Job], Any]:
    def call(job: Job) -> Any:
        return mw(job, call_next)

    return call


def _async_step(
    mw: Callable[[Job, Callable[[Job], Awaitable[Any]]], Awaitable[Any]],
    call_next: Callable[[Job], Awaitable[Any]],
) -> Callable[[Job], Awaitable[Any]]:
    async def call(job: Job) -> Any:
        return await mw(job, call_next)

    return call
