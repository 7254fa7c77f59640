"""Settings of the test project, configured in code from the environment.

``SKIPLOCK_DJANGO_URL``: the database, as a skiplock URL (postgresql://, mysql://,
mariadb://); ``SKIPLOCK_DJANGO_TABLE``: skiplock's table (default skiplock_tasks);
``SKIPLOCK_DJANGO_MORE_TASKS``: more ``TASKS`` entries, as JSON (a backend added later).
"""

from __future__ import annotations

import json
import os

from dbsettings import DATABASES

SECRET_KEY = "test only"
USE_TZ = True
DEFAULT_AUTO_FIELD = "django.db.models.AutoField"
INSTALLED_APPS = ["skiplock.contrib.django", "demoapp"]
__all__ = ["DATABASES"]
try:  # the backport needs its app; Django 6 has django.tasks built in
    import django.tasks  # noqa: F401
except ImportError:
    INSTALLED_APPS.insert(0, "django_tasks")

TASKS = {
    "default": {
        "BACKEND": "skiplock.contrib.django.SkiplockBackend",
        "QUEUES": ["default", "other"],
        "OPTIONS": {
            "TABLE": os.environ.get("SKIPLOCK_DJANGO_TABLE", "skiplock_tasks"),
            "MAX_ATTEMPTS": 2,
            "RETRY_DELAY": 0,
            "LEASE": 30,
            "ATOMIC": os.environ.get("SKIPLOCK_DJANGO_ATOMIC") == "1",
        },
    }
}
TASKS.update(json.loads(os.environ.get("SKIPLOCK_DJANGO_MORE_TASKS", "{}")))
LOGGING = {
    "version": 1,
    "handlers": {"err": {"class": "logging.StreamHandler"}},
    "loggers": {"skiplock": {"handlers": ["err"], "level": "INFO"}},
}
