"""``DATABASES`` from ``SKIPLOCK_DJANGO_URL`` (a skiplock URL: postgresql://, mysql://,
mariadb://), for the test project and the project built from docs/django.md; a second
database ``other`` from ``SKIPLOCK_DJANGO_OTHER_URL`` if set."""

from __future__ import annotations

import os

from skiplock.drivers.url import parse_url

_ENGINES = {"postgresql": "django.db.backends.postgresql", "mysql": "django.db.backends.mysql"}


def _database(url: str) -> dict[str, str]:
    u = parse_url(url)
    return {
        "ENGINE": _ENGINES[u.dialect],
        "NAME": u.database,
        "USER": u.user or "",
        "PASSWORD": u.password or "",
        "HOST": u.host,
        "PORT": str(u.port or ""),
    }


DATABASES = {"default": _database(os.environ["SKIPLOCK_DJANGO_URL"])}
if os.environ.get("SKIPLOCK_DJANGO_OTHER_URL"):
    DATABASES["other"] = _database(os.environ["SKIPLOCK_DJANGO_OTHER_URL"])
