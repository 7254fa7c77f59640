"""``skiplock demo`` and its embedded PostgreSQL.

May import: :mod:`skiplock`, :mod:`skiplock.errors`.
"""
