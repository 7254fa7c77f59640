"""The I/O shell around the core: sessions, transactions, pools and the loops that run the
core's operations over a connection.

Each module with an asyncio twin is written once, as ``*_async.py``, and its sync module
(``session.py``, ``transaction.py``, ``pool.py``, ``run.py``) is generated from it by
``scripts/async_to_sync`` (psycopg's convention); :mod:`.acompat` holds the primitives
that differ, :mod:`.pool_state` the pools' policy with no I/O.

May import: :mod:`skiplock._core`, :mod:`skiplock.drivers`, :mod:`skiplock.dialects`,
:mod:`skiplock.errors`, :mod:`skiplock.job`. Imported by the public queue modules and the
worker.
"""
