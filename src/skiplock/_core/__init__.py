"""The no-I/O core: what to ask of the database, and what the answer means.

May import: :mod:`skiplock.errors` and the standard library.
"""
