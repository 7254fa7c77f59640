"""skiplock for Django: a backend for Django's Tasks framework and a worker command.

Needs ``pip install 'skiplock[django]'`` (Django 6's ``django.tasks``, or the
``django-tasks`` backport on older Django). See docs/django.md.
"""

from __future__ import annotations

from .backend import SkiplockBackend

__all__ = ["SkiplockBackend"]
