"""One measured step of one system, run by bench/peers.py inside that system's venv.

    python peer_step.py SYSTEM STEP --dsn DSN [--jobs N] [--batch B] [--config tuned|defaults]
        [--samples K] [--gap S] [--timeout S]

SYSTEM is skiplock, pgqueuer, procrastinate, oban or chancy: the module ``peer_<SYSTEM>``
beside this file, which has these functions (sync or ``async def``):

- ``version() -> str``
- ``reset(dsn)``: its schema installed, its tables empty
- ``fill(dsn, n, batch, config)``: *n* no-op jobs waiting for a worker in *config*, in
  calls of *batch*
- ``enqueue(dsn, n, batch) -> seconds``: *n* jobs into an empty queue, one call (and one
  transaction) per *batch* jobs, through the single-job call when *batch* is 1
- ``drain(dsn, n, config, timeout) -> (jobs done, seconds, CPU seconds)``: its own worker,
  in its *config* (``CONFIG[config]`` says which), runs the *n* waiting jobs; the clock starts
  as the worker starts (imports and connections for the check done before) and stops at the
  last completion in the database, or at *timeout*; the CPU is the process's (every
  thread's, ``time.process_time``) over the same window
- ``latency(dsn, samples, gap, timeout) -> [ms]``: an idle worker (tuned) is given one job
  at a time; each sample from just before the enqueue call to the handler's first line

The step prints one line of JSON: the function's result. Only the standard library and the
system's own package are imported, so a venv needs nothing else.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import inspect
import json
import logging
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))


def call(fn: Any, *args: Any) -> Any:
    out = fn(*args)
    return asyncio.run(out) if inspect.iscoroutine(out) else out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("system")
    ap.add_argument("step", choices=["version", "reset", "fill", "enqueue", "drain", "latency"])
    ap.add_argument("--dsn", required=True)
    ap.add_argument("--jobs", type=int, default=1000)
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--config", choices=["tuned", "defaults"], default="tuned")
    ap.add_argument("--samples", type=int, default=200)
    ap.add_argument("--gap", type=float, default=0.02)
    ap.add_argument("--timeout", type=float, default=120.0)
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    mod = importlib.import_module(f"peer_{args.system}")
    out: dict[str, Any] = {"python": ".".join(map(str, sys.version_info[:3]))}
    if args.step == "version":
        out["version"] = call(mod.version)
        out["config"] = mod.CONFIG
    elif args.step == "reset":
        call(mod.reset, args.dsn)
    elif args.step == "fill":  # into an empty queue
        call(mod.reset, args.dsn)
        call(mod.fill, args.dsn, args.jobs, args.batch, args.config)
    elif args.step == "enqueue":
        out["seconds"] = call(mod.enqueue, args.dsn, args.jobs, args.batch)
    elif args.step == "drain":
        done, seconds, cpu = call(mod.drain, args.dsn, args.jobs, args.config, args.timeout)
        out.update(done=done, seconds=seconds, cpu=cpu)
    else:
        out["ms"] = call(mod.latency, args.dsn, args.samples, args.gap, args.timeout)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
