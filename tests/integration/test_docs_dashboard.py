"""The examples of docs/dashboard.md, run as written on every backend: each ``python``
block starts with ``# serves: PATH`` (the block builds an ASGI application, which is then
asked for PATH and must answer 200) or ``# runs: ...`` (executed)."""

from __future__ import annotations

import re
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

import skiplock

DOC = Path(__file__).parents[2] / "docs" / "dashboard.md"
_BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)
_FIRST = re.compile(r"# (serves|runs): (.+)\n")


def blocks() -> list[tuple[str, str, str]]:
    found = []
    for code in _BLOCK.findall(DOC.read_text(encoding="utf-8")):
        m = _FIRST.match(code)
        assert m, f"a python block of {DOC.name} without '# serves:' or '# runs:'"
        found.append((m[1], m[2].strip(), code))
    return found


@pytest.fixture
def dash(
    queue: skiplock.Queue, url: str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[skiplock.Queue]:
    """The examples' table (``dash_jobs`` in the text; the test's own table here, so that
    runs in parallel never share one)."""
    monkeypatch.setenv("SKIPLOCK_URL", url)
    queue.enqueue({"task": "docs.example"})
    yield queue


def _django() -> None:
    from django.conf import settings

    if not settings.configured:
        urls = types.ModuleType("dash_docs_urls")
        urls.urlpatterns = []  # type: ignore[attr-defined]
        sys.modules[urls.__name__] = urls
        settings.configure(
            DEBUG=False, SECRET_KEY="docs", ALLOWED_HOSTS=["*"], ROOT_URLCONF=urls.__name__
        )


BLOCKS = blocks()


@pytest.mark.parametrize(
    ("kind", "what", "code"), BLOCKS, ids=[f"{kind} {what}" for kind, what, _ in BLOCKS]
)
def test_dashboard_doc_example(dash: skiplock.Queue, kind: str, what: str, code: str) -> None:
    if "django" in code:
        pytest.importorskip("django")
        _django()
    namespace: dict[str, object] = {"__name__": "dashboard_doc"}
    code = code.replace('"dash_jobs"', f'"{dash.table}"')
    exec(compile(code, str(DOC), "exec"), namespace)
    if kind == "runs":
        return
    app = next(namespace[n] for n in ("application", "api", "app") if n in namespace)
    with TestClient(app, base_url="http://127.0.0.1") as client:  # type: ignore[arg-type]
        r = client.get(what, auth=("ops", "change-me"))
        assert r.status_code == 200, (what, r.text[:300])
        assert "docs.example" in r.text or "default" in r.text
    queue = namespace.get("queue")
    if isinstance(queue, skiplock.Queue):
        queue.close()
