"""One row per attempt of a task: who ran it, when, and how it ended.

The job itself (arguments, status, lease, result) lives in skiplock's table; what Django's
``TaskResult`` has and that table lacks (start times, worker ids, one error per failed
attempt) is kept here, written by ``manage.py skiplock_worker``.
"""

from __future__ import annotations

from django.db import models


class Attempt(models.Model):  # type: ignore[misc]
    """Attempt *attempt* (skiplock's fencing token) of the job *job_id* of skiplock's table
    *table* (two backends may keep their tasks in two tables of one database)."""

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
