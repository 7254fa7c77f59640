"""The attempts table, and skiplock's own table for every SkiplockBackend on this database."""

from __future__ import annotations

from typing import Any

from django.db import migrations, models


def install_queues(apps: Any, schema_editor: Any) -> None:
    """``Queue.install()`` for each skiplock TASKS backend on the database being migrated
    (idempotent; on skiplock's own connection)."""
    from django.conf import settings
    from django.utils.module_loading import import_string

    from skiplock.contrib.django.backend import SkiplockBackend

    for alias, params in getattr(settings, "TASKS", {}).items():
        cls = import_string(params["BACKEND"])
        if isinstance(cls, type) and issubclass(cls, SkiplockBackend):
            backend = cls(alias, params)
            if backend.database == schema_editor.connection.alias:
                backend.queue.install()


class Migration(migrations.Migration):  # type: ignore[misc]
    initial = True

    dependencies: list[tuple[str, str]] = []

    operations = [
        migrations.CreateModel(
            name="Attempt",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("table", models.CharField(max_length=255)),
                ("job_id", models.BigIntegerField()),
                ("attempt", models.IntegerField()),
                ("worker_id", models.CharField(max_length=64)),
                ("started_at", models.DateTimeField()),
                ("finished_at", models.DateTimeField(null=True)),
                ("exception_class_path", models.TextField(default="")),
                ("traceback", models.TextField(default="")),
            ],
            options={
                "db_table": "skiplock_attempt",
                "constraints": [
                    models.UniqueConstraint(
                        fields=("table", "job_id", "attempt"), name="skiplock_attempt_once"
                    )
                ],
            },
        ),
        migrations.RunPython(install_queues, migrations.RunPython.noop, elidable=True),
    ]
