"""The Django app: ``INSTALLED_APPS += ["skiplock.contrib.django"]``."""

from __future__ import annotations

from django.apps import AppConfig


class SkiplockConfig(AppConfig):  # type: ignore[misc]
    name = "skiplock.contrib.django"
    label = "skiplock"
    verbose_name = "skiplock"
    default_auto_field = "django.db.models.BigAutoField"
