"""The Django app: ``INSTALLED_APPS += ["skiplock.contrib.django"]``."""

from __future__ import annotations

from django.apps import AppConfig
from django.db.models.signals import post_migrate


class SkiplockConfig(AppConfig):  # type: ignore[misc]
    name = "skiplock.contrib.django"
    label = "skiplock"
    verbose_name = "skiplock"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # every migrate of a database makes (or migrates) the table of each skiplock
        # TASKS backend on it, whenever that backend was added
        from ._install import post_migrate as install_tables

        post_migrate.connect(install_tables, sender=self, dispatch_uid="skiplock.install")
