"""The raw-SQL ceiling: a bare driver loop with no library around it.

PostgreSQL (psycopg 3): claim 100 with one ``UPDATE … FROM (SELECT … FOR UPDATE SKIP
LOCKED)`` statement, then one fenced batched completion (``unnest`` of ids and attempts).
MySQL / MariaDB (mysql-connector, its C extension where it loads, as skiplock uses it):
``SELECT … FOR UPDATE SKIP LOCKED`` + ``UPDATE … WHERE id IN``, then one fenced
``UPDATE … WHERE (id, attempt) IN (…)``. Each step is its own transaction, as in
skiplock. The table is a minimal job table with the same claim order (priority, run_at,
id) and a claim index.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from common import PAYLOAD, mysql_kwargs, pg_dsn, rate

TABLE = "bench_raw"
BATCH = 100

PG_INSTALL = f"""
DROP TABLE IF EXISTS {TABLE};
CREATE TABLE {TABLE} (
    id bigserial PRIMARY KEY, queue text NOT NULL, payload json NOT NULL,
    priority int NOT NULL DEFAULT 0, status text NOT NULL DEFAULT 'pending',
    attempt int NOT NULL DEFAULT 0, run_at timestamptz NOT NULL DEFAULT now(),
    lease_until timestamptz, finished_at timestamptz);
CREATE INDEX ON {TABLE} (queue, priority, run_at, id) WHERE status IN ('pending', 'running');
"""
PG_INSERT = (
    f"INSERT INTO {TABLE} (queue, payload) SELECT 'default', p::json FROM unnest(%s::text[]) p"
)
PG_CLAIM = f"""
UPDATE {TABLE} j SET status = 'running', attempt = j.attempt + 1,
    lease_until = now() + interval '30 s', run_at = now() + interval '30 s'
FROM (SELECT id FROM {TABLE} WHERE queue = 'default' AND status IN ('pending', 'running')
      AND run_at <= now() ORDER BY priority, run_at, id LIMIT {BATCH} FOR UPDATE SKIP LOCKED) p
WHERE j.id = p.id RETURNING j.id, j.attempt, j.payload"""
PG_COMPLETE = f"""
UPDATE {TABLE} j SET status = 'done', lease_until = NULL, finished_at = now()
FROM unnest(%s::bigint[], %s::int[]) v(id, attempt)
WHERE j.id = v.id AND j.attempt = v.attempt AND j.status = 'running'"""

MY_INSTALL = [
    f"DROP TABLE IF EXISTS {TABLE}",
    f"""CREATE TABLE {TABLE} (
    id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, queue VARCHAR(255) NOT NULL,
    payload LONGTEXT NOT NULL, priority INT NOT NULL DEFAULT 0,
    status VARCHAR(16) NOT NULL DEFAULT 'pending', attempt INT NOT NULL DEFAULT 0,
    run_at DATETIME(6) NOT NULL, lease_until DATETIME(6) NULL, finished_at DATETIME(6) NULL,
    claimable TINYINT AS (CASE WHEN status IN ('pending', 'running') THEN 1 END) STORED,
    KEY claim_idx (claimable, queue, priority, run_at, id)) ENGINE = InnoDB""",
]
MY_PICK = f"""
SELECT id, attempt, payload FROM {TABLE}
WHERE claimable = 1 AND queue = 'default' AND run_at <= UTC_TIMESTAMP(6)
ORDER BY priority, run_at, id LIMIT {BATCH} FOR UPDATE SKIP LOCKED"""


class RawPostgres:
    name = "raw SQL"

    def __init__(self, url: str) -> None:
        import psycopg

        self.conn: Any = psycopg.connect(pg_dsn(url))

    def reset(self) -> None:
        with self.conn.cursor() as cur:
            cur.execute(PG_INSTALL)
        self.conn.commit()

    def fill(self, n: int, batch: int) -> None:
        body = json.dumps(PAYLOAD)
        with self.conn.cursor() as cur:
            for i in range(0, n, batch):
                cur.execute(PG_INSERT, ([body] * min(batch, n - i),))
                self.conn.commit()

    def enqueue(self, n: int, batch: int) -> float:
        self.reset()
        start = time.perf_counter()
        self.fill(n, batch)
        return rate(n, time.perf_counter() - start)

    def enqueue_copy(self, n: int) -> float:
        self.reset()
        body = json.dumps(PAYLOAD)
        start = time.perf_counter()
        with self.conn.cursor() as cur, cur.copy(f"COPY {TABLE} (queue, payload) FROM STDIN") as cp:
            for _ in range(n):
                cp.write_row(("default", body))
        self.conn.commit()
        return rate(n, time.perf_counter() - start)

    def drain(self, n: int, batch: int) -> float:
        self.reset()
        self.fill(n, batch)
        return self.run_drain(n)

    def run_drain(self, n: int | None, mark: Callable[[str], object] | None = None) -> float:
        """The loop's drain of the *n* jobs already waiting (None: of its share of them,
        with other processes draining too); jobs/s. *mark*, if given, is called after each
        step with its name ("claim", "complete"; a step ends with its COMMIT), and once before
        the first ("start")."""
        done = 0
        start = time.perf_counter()
        if mark:
            mark("start")
        with self.conn.cursor() as cur:
            while True:
                cur.execute(PG_CLAIM)
                rows = cur.fetchall()
                self.conn.commit()
                if mark:
                    mark("claim")
                if not rows:
                    break
                cur.execute(PG_COMPLETE, ([r[0] for r in rows], [r[1] for r in rows]))
                done += cur.rowcount
                self.conn.commit()
                if mark:
                    mark("complete")
        took = time.perf_counter() - start
        if n is None:
            return rate(done, took)
        if done != n:
            raise RuntimeError(f"raw PostgreSQL loop completed {done} of {n}")
        return rate(n, took)

    def close(self) -> None:
        self.conn.close()


class RawMySQL:
    name = "raw SQL"

    def __init__(self, url: str) -> None:
        import mysql.connector

        from skiplock.drivers.mysql import use_pure

        pure = use_pure(mysql.connector)
        self.conn: Any = mysql.connector.connect(
            **mysql_kwargs(url), use_pure=pure, autocommit=False, charset="utf8mb4"
        )
        cur = self.conn.cursor()
        cur.execute("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED")
        cur.close()

    def reset(self) -> None:
        cur = self.conn.cursor()
        for statement in MY_INSTALL:
            cur.execute(statement)
        cur.close()
        self.conn.commit()

    def fill(self, n: int, batch: int) -> None:
        body = json.dumps(PAYLOAD)
        cur = self.conn.cursor()
        for i in range(0, n, batch):
            k = min(batch, n - i)
            rows = ", ".join(["('default', %s, UTC_TIMESTAMP(6))"] * k)
            cur.execute(f"INSERT INTO {TABLE} (queue, payload, run_at) VALUES {rows}", [body] * k)
            self.conn.commit()
        cur.close()

    def enqueue(self, n: int, batch: int) -> float:
        self.reset()
        start = time.perf_counter()
        self.fill(n, batch)
        return rate(n, time.perf_counter() - start)

    def drain(self, n: int, batch: int) -> float:
        self.reset()
        self.fill(n, batch)
        return self.run_drain(n)

    def run_drain(self, n: int | None, mark: Callable[[str], object] | None = None) -> float:
        """The loop's drain of the *n* jobs already waiting (None: of its share of them,
        with other processes draining too); jobs/s. *mark*: as for
        :meth:`RawPostgres.run_drain`."""
        done = 0
        cur = self.conn.cursor()
        start = time.perf_counter()
        if mark:
            mark("start")
        while True:
            cur.execute(MY_PICK)
            rows = cur.fetchall()
            if not rows:
                self.conn.commit()
                if mark:
                    mark("claim")
                break
            ids = [r[0] for r in rows]
            marks = ", ".join(["%s"] * len(ids))
            cur.execute(
                f"UPDATE {TABLE} SET status = 'running', attempt = attempt + 1, "
                "lease_until = UTC_TIMESTAMP(6) + INTERVAL 30 SECOND, "
                f"run_at = UTC_TIMESTAMP(6) + INTERVAL 30 SECOND WHERE id IN ({marks})",
                ids,
            )
            self.conn.commit()
            if mark:
                mark("claim")
            pairs = ", ".join(["(%s, %s)"] * len(rows))
            flat = [v for r in rows for v in (r[0], r[1] + 1)]
            cur.execute(
                f"UPDATE {TABLE} SET status = 'done', lease_until = NULL, "
                f"finished_at = UTC_TIMESTAMP(6) WHERE (id, attempt) IN ({pairs}) "
                "AND status = 'running'",
                flat,
            )
            done += cur.rowcount
            self.conn.commit()
            if mark:
                mark("complete")
        took = time.perf_counter() - start
        cur.close()
        if n is None:
            return rate(done, took)
        if done != n:
            raise RuntimeError(f"raw MySQL loop completed {done} of {n}")
        return rate(n, took)

    def close(self) -> None:
        self.conn.close()
