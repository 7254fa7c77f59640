"""The I/O shell around the core: sessions, transactions, pools, a queue's settings, the
versioned schema and the worker's port (:mod:`.worker_port`). Each ``*_async.py`` module is
the source of its sync twin (``scripts/async_to_sync``).
"""
