"""The statements one claim sends, by name, in a few situations: a plain claim, several
queues, keyed jobs, a queue with a concurrency limit, a rate-limited queue (with room,
then full), a key's rate (admitted, then given back), a lease expired with its attempts
spent, a workflow's child.

    python bench/claim_statements.py $SKIPLOCK_TEST_POSTGRESQL_URL
    python bench/claim_statements.py $SKIPLOCK_TEST_MARIADB_URL

Each line: the situation, the number of requests (statements and the COMMIT) and their
names (a statement read back by its text from the dialect's ``.sql`` file). Two runs of
two releases print the same lines when their claims make the same round trips.
"""

from __future__ import annotations

import re
import sys
import time
from typing import Any

import skiplock
from skiplock.drivers.base import Adapter

TABLE = "bench_claim_statements"


def main(url: str) -> None:
    sent: list[Any] = []
    execute = Adapter.execute

    def spy(self: Adapter, request: Any) -> Any:
        sent.append(request)
        return execute(self, request)

    limits = {"capped": 2}
    rates = {"rated": (2, 60.0)}
    with skiplock.connect(url, table=TABLE, queue_limits=limits, rate_limits=rates) as q:
        q.uninstall()
        q.install()
        names = {_code(sql): name for name, sql in q.dialect.sql.items()}

        def claim(what: str, **kw: Any) -> list[Any]:
            sent.clear()
            Adapter.execute = spy  # type: ignore[method-assign]
            try:
                jobs = q.claim(**kw)
            finally:
                Adapter.execute = execute  # type: ignore[method-assign]
            said = [_name(r, names) for r in sent]
            print(f"{what:<28} {len(jobs):>2} jobs {len(said):>2} requests: {' '.join(said)}")
            return list(jobs)

        claim("nothing due", limit=10)
        q.enqueue_many([{"n": i} for i in range(10)])
        claim("plain, 10 of 10", limit=10)
        q.enqueue_many([{"n": i} for i in range(3)], queue="a")
        q.enqueue_many([{"n": i} for i in range(3)], queue="b")
        claim("two queues", queues=["a", "b"], limit=10)
        q.enqueue_many([{"n": i} for i in range(3)], key="k1")
        q.enqueue_many([{"n": i} for i in range(3)], key="k2")
        claim("keyed", limit=10)
        q.enqueue_many([{"n": i} for i in range(5)], queue="capped")
        claim("capped, room 2", queues="capped", limit=10)
        claim("capped, full", queues="capped", limit=10)
        q.enqueue_many([{"n": i} for i in range(5)], queue="rated")
        claim("rated, room 2", queues="rated", limit=10)
        claim("rated, full", queues="rated", limit=10)
        q.enqueue_many([{"n": i} for i in range(3)], queue="mixed")
        claim("capped + free", queues=["capped", "mixed"], limit=10)
        q.enqueue_many(
            [{"n": i} for i in range(4)], queue="kr", key="kr", key_concurrency=4, key_rate=(1, 60)
        )
        q.enqueue_many([{"n": i} for i in range(4)], queue="kr")
        claim("key rate: admitted", queues="kr", limit=2)
        claim("key rate: given back", queues="kr", limit=2)
        q.enqueue({"n": 0}, queue="spent", max_attempts=1)
        claim("lease to expire", queues="spent", lease=0.2)
        time.sleep(0.5)
        claim("attempts spent", queues="spent")
        parent = q.enqueue({"n": 0}, queue="wf")
        q.enqueue({"n": 1}, queue="wf", after=[parent])
        [job] = claim("workflow parent", queues="wf")
        q.complete(job, result=7)
        claim("workflow child", queues="wf")
        q.uninstall()


def _code(sql: str) -> str:
    """A statement's text without comments and spaces (how it is recognised)."""
    lines = (line.split("--")[0] for line in sql.splitlines())
    return re.sub(r"\s+", " ", " ".join(lines)).strip()


def _name(request: Any, names: dict[str, str]) -> str:
    sql = getattr(request, "sql", None)
    if sql is None:
        return str(getattr(request, "action", request)).upper()
    code = _code(sql)
    if code in names:
        return names[code]
    # a statement whose list parameters were expanded: the longest name whose text starts
    # the same
    for known, name in sorted(names.items(), key=lambda kv: -len(kv[0])):
        if known and code[:60] == known[:60]:
            return name
    return code.split(" ")[0].lower() + "?"


if __name__ == "__main__":
    main(sys.argv[1])
