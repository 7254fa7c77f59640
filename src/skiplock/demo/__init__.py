"""``skiplock demo`` and the embedded PostgreSQL it runs on when no URL is given:
:mod:`.story` (the worker processes and the checks of the summary), :mod:`.embedded` (the
server process) and :mod:`.embedded_install` (where the server binaries are).

May import: the public API (:mod:`skiplock`) and :mod:`skiplock.errors`; the embedded
server's modules are also used by :mod:`skiplock.testing` and the test matrix.
"""
