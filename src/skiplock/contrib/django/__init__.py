"""skiplock for Django's Tasks framework (``pip install 'skiplock[django]'``); see
docs/django.md.
"""

from __future__ import annotations

from .backend import SkiplockBackend

__all__ = ["SkiplockBackend"]
