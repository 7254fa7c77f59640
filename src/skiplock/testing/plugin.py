"""skiplock's pytest plugin: the fixtures ``skiplock_url`` and ``skiplock_queue``
(``pytest -p no:skiplock`` turns it off).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

from ..queue import Queue

__all__ = ["URL_VARIABLE", "skiplock_queue", "skiplock_url"]

#: the environment variable naming the database the fixtures use
URL_VARIABLE = "SKIPLOCK_TEST_URL"


@pytest.fixture(scope="session")
def skiplock_url() -> Iterator[str]:
    """The test database's URL: ``$SKIPLOCK_TEST_URL``, else an embedded PostgreSQL
    (``skiplock[demo]``) for the session. Raises ConfigurationError when neither is there.
    """
    url = os.environ.get(URL_VARIABLE)
    if url:
        yield url
        return
    from ..demo.embedded import EmbeddedPostgres, available
    from ..errors import ConfigurationError

    if not available():
        raise ConfigurationError(
            f"skiplock_url: set {URL_VARIABLE} to a test database's URL (PostgreSQL, MySQL, "
            "MariaDB or SQL Server), or pip install 'skiplock[demo]' for an embedded PostgreSQL"
        )
    server = EmbeddedPostgres()
    try:
        yield server.start()
    finally:
        server.stop()


@pytest.fixture
def skiplock_queue(skiplock_url: str) -> Iterator[Queue]:
    """A :class:`~skiplock.Queue` on a table of this test's own, installed, and dropped after
    the test.
    """
    queue = Queue(skiplock_url, table=f"skiplock_test_{uuid.uuid4().hex[:12]}")
    try:
        queue.install()
    except BaseException:
        queue.close()
        raise
    try:
        yield queue
    finally:
        try:
            queue.uninstall()
        finally:
            queue.close()
