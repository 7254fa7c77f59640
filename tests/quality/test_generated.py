"""The sync modules made from their asyncio source by scripts/async_to_sync are current,
and they are what skiplock imports (docs/architecture.md, "One source for sync and
async")."""

from __future__ import annotations

import ast
import importlib
import re
import shutil
import textwrap
from pathlib import Path

import pytest

import skiplock

from .scripts import load_script

ROOT = Path(__file__).resolve().parents[2]


GEN = load_script("async_to_sync")
PAIRS = sorted(GEN.GENERATED.items())


@pytest.mark.skipif(shutil.which("ruff") is None, reason="ruff is not installed ([test] extra)")
@pytest.mark.parametrize(("source", "target"), PAIRS, ids=[t.name for _, t in PAIRS])
def test_each_generated_module_is_current(source: Path, target: Path) -> None:
    expected = GEN.generate(source, target)
    committed = (ROOT / target).read_text()
    assert committed == expected, (
        f"{target} is not what {source} generates: run scripts/async_to_sync (never edit "
        "the generated file)"
    )


@pytest.mark.parametrize(("source", "target"), PAIRS, ids=[t.name for _, t in PAIRS])
def test_no_generated_module_claims_to_be_the_source(source: Path, target: Path) -> None:
    text = (ROOT / target).read_text()
    doc = ast.get_docstring(ast.parse(text)) or ""
    assert GEN.made_from(source) in doc, target
    rest = text.removeprefix(GEN.header(source)).replace(GEN.made_from(source), "")
    assert not re.search(r"async_to_sync|\bthe source\b|from this module", rest), target


def _module_name(target: Path) -> str:
    return ".".join(("skiplock", *target.relative_to(GEN.PACKAGE).with_suffix("").parts))


@pytest.mark.parametrize(("source", "target"), PAIRS, ids=[t.name for _, t in PAIRS])
def test_the_generated_module_is_the_one_imported(source: Path, target: Path) -> None:
    sync = importlib.import_module(_module_name(target))
    assert sync.__file__ is not None
    assert Path(sync.__file__).resolve() == (ROOT / target).resolve()
    assert (ROOT / target).read_text().startswith(GEN.header(source))
    # what the sync module defines is exactly its source's, renamed; what the source
    # re-exports (the queue's Transaction, backoff), the sync module re-exports renamed
    aio = importlib.import_module(_module_name(source))
    renamed = {GEN.NAMES.get(n, n) for n in aio.__all__}
    assert set(sync.__all__) == renamed
    for name in aio.__all__:
        ours, theirs = getattr(aio, name), getattr(sync, GEN.NAMES.get(name, name))
        defined_here = getattr(ours, "__module__", None) == aio.__name__
        assert defined_here == (getattr(theirs, "__module__", None) == sync.__name__), name


def test_the_queues_run_on_the_generated_machinery() -> None:
    from skiplock._shell import pool as _pool
    from skiplock._shell import pool_async as _aio_pool
    from skiplock._shell import session as _session
    from skiplock._shell import session_async as _aio_session

    assert skiplock.Queue.__mro__[1] is _session.Session
    assert skiplock.AsyncQueue.__mro__[1] is _aio_session.AsyncSession
    assert skiplock.Transaction.__module__ == "skiplock._shell.transaction"
    q = skiplock.connect("postgresql://u@127.0.0.1:1/db")
    aq = skiplock.connect_async("postgresql://u@127.0.0.1:1/db")
    assert type(q._pool) is _pool.Pool and type(aq._pool) is _aio_pool.AsyncPool
    for target in GEN.GENERATED.values():  # no asyncio left in a sync module
        tree = ast.parse((ROOT / target).read_text())
        kinds = (ast.AsyncFunctionDef, ast.Await, ast.AsyncWith, ast.AsyncFor)
        assert not [n for n in ast.walk(tree) if isinstance(n, kinds)], target
        assert "asyncio" not in {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}


def test_the_transformer_rules() -> None:
    source = textwrap.dedent(
        '''\
        """Doc: AsyncPool stays as written in text."""
        from collections.abc import AsyncIterator, Awaitable, Callable
        from .pool_async import AsyncPool
        from .acompat import asleep

        __all__ = ["AsyncThing"]


        class AsyncThing(AsyncPool):
            opener: Callable[[], Awaitable[int]]

            async def __aenter__(self) -> AsyncThing:  # a comment is kept
                await asleep(0)
                async with self.lock:
                    n = await self.opener()
                if True:  # ASYNC
                    n += await self.more()
                else:
                    n += self.more_sync()
                    n += 1
                if True:  # ASYNC
                    print("async only")
                return (n, await self.x)[0]
        '''
    )
    names = {**GEN.NAMES, "AsyncThing": "Thing"}
    saved, GEN.NAMES = GEN.NAMES, names
    try:
        out = GEN.transform(source)
    finally:
        GEN.NAMES = saved
    assert out == textwrap.dedent(
        '''\
        """Doc: AsyncPool stays as written in text."""
        from collections.abc import Iterator, Callable
        from .pool import Pool
        from .acompat import sleep

        __all__ = ["Thing"]


        class Thing(Pool):
            opener: Callable[[], int]

            def __enter__(self) -> Thing:  # a comment is kept
                sleep(0)
                with self.lock:
                    n = self.opener()
                n += self.more_sync()
                n += 1
                return (n, self.x)[0]
        '''
    )
