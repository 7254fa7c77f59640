"""The ``skiplock`` command: :mod:`.main` (the parser, the worker and demo commands),
:mod:`.schema` (install, migrate, sql, uninstall), :mod:`.jobs` (jobs, show),
:mod:`.targets` (loading the user's App or handler) and :mod:`.json_args` (JSON arguments).

May import: the public API (:mod:`skiplock`), :mod:`skiplock._core`, :mod:`skiplock.demo`,
:mod:`skiplock._fleet`.
Nothing imports it but ``python -m skiplock`` and the console script.
"""

from .main import EXIT_CODES, main

__all__ = ["EXIT_CODES", "main"]
