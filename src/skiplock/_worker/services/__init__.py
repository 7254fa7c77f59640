"""The worker's services, each on a thread or connection of its own beside the claim loop:
the single-worker lock (:mod:`.lock`), retention (:mod:`.retention`) and periodic jobs
(:mod:`.periodic`).

May import: the public queue API (:mod:`skiplock.queue`), the schedules of
:mod:`skiplock.periodic`, :mod:`skiplock._core`, :mod:`skiplock.errors`,
:mod:`skiplock._core.job`. Imported by :mod:`skiplock._worker`, the public worker modules
and :mod:`skiplock.app`.
"""
