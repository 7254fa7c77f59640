"""Unit tests: no database server, no subprocess; each runs in a few milliseconds.
Run them alone with ``python -m pytest tests/unit``."""
