"""A fleet of worker processes under one supervisor (:class:`skiplock.Fleet`)."""

from .supervisor import Fleet, process_count, processes_from_text

__all__ = ["Fleet", "process_count", "processes_from_text"]
