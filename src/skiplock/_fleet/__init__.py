"""A fleet of worker processes under one supervisor (``skiplock worker APP --processes N``,
:class:`skiplock.Fleet`).

=============  ============================================================================
module         what it holds
=============  ============================================================================
supervisor     :class:`Fleet`: starts, restarts and stops the processes; its backstop kills
               one that does not end itself after a handler passed its timeout
child          one process: builds its worker from the target's name, ends itself when a
               handler passes its timeout (after releasing its other jobs)
target         ``module:attr`` names: what a spawned process imports
metrics        one ``/metrics`` for the fleet: each process reports its worker's metrics
               over its pipe, the supervisor serves their sums
=============  ============================================================================

May import: the public modules below it (:mod:`skiplock.app`, :mod:`skiplock.worker`,
:mod:`skiplock.async_worker`, :mod:`skiplock.queue`), :mod:`skiplock._worker` (the runner
it extends), :mod:`skiplock._core`, :mod:`skiplock.errors`. Imported by :mod:`skiplock`
(``skiplock.Fleet``) and :mod:`skiplock.cli`.
"""

from .supervisor import Fleet, process_count, processes_from_text

__all__ = ["Fleet", "process_count", "processes_from_text"]
