"""The ``skiplock`` command.

May import: :mod:`skiplock`, :mod:`skiplock._core`, :mod:`skiplock.demo`,
:mod:`skiplock._fleet`.
"""

from .main import EXIT_CODES, main

__all__ = ["EXIT_CODES", "main"]
