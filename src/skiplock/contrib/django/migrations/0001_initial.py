"""The attempts table (skiplock's own table is installed by ``post_migrate``)."""

from __future__ import annotations

from django.db import migrations, models


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
    ]
