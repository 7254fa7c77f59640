"""A fleet of worker processes under one supervisor (:class:`skiplock.Fleet`).

May import: :mod:`skiplock.app`, :mod:`skiplock.worker`, :mod:`skiplock.worker_async`,
:mod:`skiplock.queue`, :mod:`skiplock._worker`, :mod:`skiplock._core`, :mod:`skiplock.errors`.
"""

from .supervisor import Fleet, process_count, processes_from_text

__all__ = ["Fleet", "process_count", "processes_from_text"]
