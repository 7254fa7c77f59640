"""The I/O shell around the core: sessions (checkout, the retry loop, COMMIT), transactions,
pools, the queue's settings and the versioned schema (:mod:`.schema`, which migrates).

Each module with an asyncio twin is written once, as ``*_async.py``, and its sync module
(``session.py``, ``transaction.py``, ``pool.py``) is generated from it by
``scripts/async_to_sync`` (psycopg's convention); :mod:`.acompat` holds the primitives
that differ, :mod:`.pool_state` the pools' policy with no I/O. The loops that drive one
operation over one connection are :mod:`skiplock.drivers.run_async` / ``run``.

May import: :mod:`skiplock._core`, :mod:`skiplock.drivers`, :mod:`skiplock.dialects`,
:mod:`skiplock.errors`, :mod:`skiplock._core.job`. Imported by the public queue modules and the
worker.
"""
