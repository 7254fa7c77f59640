"""One row per attempt of a task: who ran it, when, and how it ended."""

from __future__ import annotations

from django.db import models


class Attempt(models.Model):  # type: ignore[misc]
    """Attempt *attempt* of the job *job_id* of skiplock's table *table*."""

    table = models.CharField(max_length=255)
    job_id = models.BigIntegerField()
    attempt = models.IntegerField()
    worker_id = models.CharField(max_length=64)
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True)
    exception_class_path = models.TextField(default="")
    traceback = models.TextField(default="")

    class Meta:
        app_label = "skiplock"
        db_table = "skiplock_attempt"
        constraints = [
            models.UniqueConstraint(
                fields=["table", "job_id", "attempt"], name="skiplock_attempt_once"
            )
        ]

    def __str__(self) -> str:
        return f"job {self.job_id} attempt {self.attempt}"
