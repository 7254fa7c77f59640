"""The ``skiplock`` command."""

from .main import EXIT_CODES, main

__all__ = ["EXIT_CODES", "main"]
