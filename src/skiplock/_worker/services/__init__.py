"""The worker's services beside the claim loop: the single-worker lock, retention and periodic
jobs.

May import: the queue, :mod:`skiplock.periodic`, :mod:`skiplock._core`, :mod:`skiplock.errors`
and the worker's port."""
