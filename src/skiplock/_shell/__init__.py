"""The I/O shell around the core: sessions, transactions, pools, a queue's settings and the
versioned schema. Each ``*_async.py`` module is the source of its sync twin
(``scripts/async_to_sync``).

May import: :mod:`skiplock._core`, :mod:`skiplock.drivers`, :mod:`skiplock.dialects`,
:mod:`skiplock.errors`.
"""
