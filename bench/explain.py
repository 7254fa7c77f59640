"""The plans of skiplock's statements against the raw loop's, for ``bench/statements.py``.

``--plans``: the plan each statement of a drain ran with, from ``auto_explain`` (loaded for
the bench database's new sessions only for this pass, every statement logged, no per-node
timing): how many calls ran each plan shape (its scan and join nodes) and their total
execution time. A plan can change with the values bound: a connection's first executions
of a statement are planned for their values (psycopg sends a statement unprepared until it
has run it ``prepare_threshold`` times, 5; the server then plans the first 5 executions of
a prepared statement for their values before it settles on a generic plan).

``--explain ROWS``: ``EXPLAIN (ANALYZE, BUFFERS, WAL, SERIALIZE)`` of one claim and one
completion. Each round, for each system: its table is rebuilt with *ROWS* claimable jobs
(``VACUUM ANALYZE``d with ``--analyze``; the drains' tables have no statistics); the claim
of 100 is explained (rolled back), then run for real, and the fenced completion of the 100
jobs it took is explained (rolled back). Each explained statement follows an empty run of
itself (a claim of 0, a completion of none: this backend's caches are filled) and a
``CHECKPOINT`` (both systems pay their pages' first WAL image). Values are bound, so these
are the plans for the values (see above). Node figures include the nodes below them (a
CTE's work is counted where it is read as well as under its own node); timing every node
adds its own overhead, and the server rounds each loop's time to 1 µs (an inner node run
100 times at under 1 µs shows as ``< 0.001 x 100``).
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

from common import pg_dsn
from raw import BATCH, PG_CLAIM, PG_COMPLETE, RawPostgres
from raw import TABLE as RAW_TABLE
from sk import TABLE as SK_TABLE
from sk import Skiplock

EXPLAIN = "EXPLAIN (ANALYZE, BUFFERS, WAL, SERIALIZE TEXT, FORMAT JSON) "
Plan = dict[str, Any]
Rows = list[dict[str, Any]]


class _System:
    """One system's table, claim and completion (with their parameters)."""

    def __init__(self, url: str, skiplock: bool) -> None:
        self.obj: Skiplock | RawPostgres
        if skiplock:
            self.obj = Skiplock(url)
            sql = self.obj.q.dialect.sql
            self.table, self.claim, self.complete = SK_TABLE, sql["claim"], sql["complete_many"]
        else:
            self.obj = RawPostgres(url)
            self.table, self.claim, self.complete = RAW_TABLE, PG_CLAIM, PG_COMPLETE
        self.skiplock = skiplock

    def claim_params(self, limit: int) -> tuple[str, Any]:
        if self.skiplock:
            return self.claim, {"queue": "default", "limit": limit, "lease_ms": 30_000}
        return self.claim.replace(f"LIMIT {BATCH}", f"LIMIT {limit}"), None

    def complete_params(self, rows: Rows) -> Any:
        ids, attempts = [r["id"] for r in rows], [r["attempt"] for r in rows]
        if self.skiplock:
            return {"ids": ids, "attempts": attempts, "results": [None] * len(rows)}
        return ids, attempts


def explain(url: str, rows: int, runs: int, analyze: bool = False) -> dict[str, list[Plan]]:
    """ "system statement" → its plan in each round (see the module's docstring)."""
    import psycopg

    systems = [("skiplock", _System(url, True)), ("raw", _System(url, False))]
    out: dict[str, list[Plan]] = {}
    with psycopg.connect(pg_dsn(url), autocommit=True) as conn:
        for _ in range(runs):
            for label, s in systems:
                s.obj.reset()
                s.obj.fill(rows, rows)
                if analyze:
                    conn.execute(f"VACUUM ANALYZE {s.table}")
                _explain(conn, *s.claim_params(0))
                conn.execute("CHECKPOINT")
                out.setdefault(f"{label} claim", []).append(_explain(conn, *s.claim_params(100)))
                cur = conn.execute(*s.claim_params(100))
                names = [d.name for d in cur.description or []]
                taken = [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
                _explain(conn, s.complete, s.complete_params([]))
                conn.execute("CHECKPOINT")
                plan = _explain(conn, s.complete, s.complete_params(taken))
                out.setdefault(f"{label} complete", []).append(plan)
    for _, s in systems:
        s.obj.close()
    return out


def _explain(conn: Any, sql: str, params: Any) -> Plan:
    with conn.transaction(force_rollback=True):
        (got,) = conn.execute(EXPLAIN + sql, params).fetchone()
    return dict(got[0])


def _nodes(node: Plan, depth: int = 0) -> list[tuple[str, Plan]]:
    what = "· " * depth + node["Node Type"]
    for k in ("Subplan Name", "CTE Name", "Index Name", "Relation Name"):
        if k in node:
            what += f" {node[k]}"
    out = [(what, node)]
    for child in node.get("Plans", []):
        out += _nodes(child, depth + 1)
    return out


def print_plans(label: str, rows: int, plans: list[Plan]) -> None:
    """The plan's nodes, each figure the median of the rounds (the plans have one shape)."""

    def med(get: Callable[[Plan], float]) -> float:
        return statistics.median(get(p) for p in plans)

    planning = med(lambda p: p["Planning Time"])
    execution = med(lambda p: p["Execution Time"])
    ser = med(lambda p: p.get("Serialization", {}).get("Time", 0))
    kb = med(lambda p: p.get("Serialization", {}).get("Output Volume", 0))
    print(
        f"\n{label} of 100 jobs ({rows:,} claimable), EXPLAIN (ANALYZE, BUFFERS, WAL, "
        f"SERIALIZE), medians of {len(plans)}: planning {planning:.3f} ms, execution "
        f"{execution:.3f} ms, serialization {ser:.3f} ms for {kb:.0f} kB\n"
    )
    print("| node (with the nodes below it) | rows | ms | hit | dirtied | WAL rec | WAL B |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    trees = [_nodes(p["Plan"]) for p in plans]
    for i, (what, _) in enumerate(trees[0]):

        def at(key: str, per_loop: bool = False, i: int = i) -> float:
            return statistics.median(
                float(t[i][1].get(key, 0)) * (t[i][1].get("Actual Loops", 1) if per_loop else 1)
                for t in trees
            )

        loops = trees[0][i][1].get("Actual Loops", 1)
        ms = f"{at('Actual Total Time', True):.3f}"
        if loops > 1 and ms == "0.000":  # the server rounds each loop's time to 1 µs
            ms = f"< 0.001 x {loops:,}"
        print(
            f"| {what} | {at('Actual Rows', True):,.0f} | {ms} | "
            f"{at('Shared Hit Blocks'):,.0f} | {at('Shared Dirtied Blocks'):,.0f} | "
            f"{at('WAL Records'):,.0f} | {at('WAL Bytes'):,.0f} |"
        )


# -- the plans a drain ran (auto_explain) -------------------------------------------------

AUTO_EXPLAIN = {"session_preload_libraries": "auto_explain", "auto_explain.log_min_duration": 0}
_ENTRY = re.compile(r"\n(?=\S[^\n]*LOG:  duration: )")
_NODE = re.compile(r"(\w[\w ]*?(?:Scan|Join|Loop))(?: using (\S+))?(?: on (\S+))?")

Shapes = dict[tuple[str, str], tuple[int, float]]  # (statement, plan) → (calls, ms)


def drain_plans(url: str, log: Path, drains: list[Any], name: Callable[[str], str]) -> Any:
    """label → Shapes: of each of *drains* (label, prepare, drain), the drain run with
    auto_explain on for the bench database's new sessions (its preparation before that);
    *log* is the server's log, *name* names a statement from its text."""
    import psycopg

    database = url.rsplit("/", 1)[1]
    out: dict[str, Shapes] = {}
    with psycopg.connect(pg_dsn(url), autocommit=True) as conn:
        try:
            for label, prepare, drain in drains:
                prepare()
                for k, v in AUTO_EXPLAIN.items():
                    conn.execute(f'ALTER DATABASE "{database}" SET {k} = {v!r}')
                start = log.stat().st_size
                drain()
                conn.execute(f'ALTER DATABASE "{database}" RESET ALL')
                out[label] = _shapes(log.read_bytes()[start:].decode(errors="replace"), name)
        finally:
            conn.execute(f'ALTER DATABASE "{database}" RESET ALL')
    return out


def _shapes(text: str, name: Callable[[str], str]) -> Shapes:
    out: Shapes = {}
    for entry in _ENTRY.split(text):
        found = re.search(r"LOG:  duration: ([0-9.]+) ms\s+plan:\s+Query Text: (.*)", entry, re.S)
        if not found:
            continue
        ms, body = float(found[1]), found[2]
        query = "\n".join(line for line in body.splitlines() if not line.strip().startswith("--"))
        nodes = []
        for line in body.splitlines():
            if "(cost=" in line and (node := _NODE.search(line.split("(cost=")[0])):
                nodes.append(" ".join(filter(None, [node[1].strip(), node[2] or node[3]])))
        key = (name(query), " / ".join(nodes))
        calls, total = out.get(key, (0, 0.0))
        out[key] = (calls + 1, total + ms)
    return out


def print_shapes(label: str, shapes: Shapes) -> None:
    print(f"\n{label}, drain: the plans its statements ran (auto_explain)\n")
    print("| statement | plan (scans and joins) | calls | total ms | ms per call |")
    print("|---|---|---:|---:|---:|")
    for (name, plan), (calls, ms) in sorted(shapes.items(), key=lambda kv: -kv[1][1]):
        if name in ("claim", "complete"):
            print(f"| {name} | {plan} | {calls:,} | {ms:,.1f} | {ms / calls:.3f} |")
