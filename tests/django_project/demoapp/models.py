"""The user's own rows: a task's effects and an enqueue's companion row."""

from __future__ import annotations

from django.db import models


class Note(models.Model):  # type: ignore[misc]
    text = models.CharField(max_length=200)

    class Meta:
        app_label = "demoapp"
