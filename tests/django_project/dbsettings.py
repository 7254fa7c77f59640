"""``DATABASES`` from ``SKIPLOCK_DJANGO_URL`` (a skiplock URL: postgresql://, mysql://,
mariadb://), for the test project and the project built from docs/django.md."""

from __future__ import annotations

import os

from skiplock._url import parse_url

_url = parse_url(os.environ["SKIPLOCK_DJANGO_URL"])
_ENGINES = {"postgresql": "django.db.backends.postgresql", "mysql": "django.db.backends.mysql"}

DATABASES = {
    "default": {
        "ENGINE": _ENGINES[_url.dialect],
        "NAME": _url.database,
        "USER": _url.user or "",
        "PASSWORD": _url.password or "",
        "HOST": _url.host,
        "PORT": str(_url.port or ""),
    }
}
