"""An application's tasks: signing up sends a welcome mail, through the queue."""

from __future__ import annotations

import skiplock

app = skiplock.App()  # the database is $SKIPLOCK_URL; tests isolate the app (test_tasks.py)

#: stands in for a mail service
outbox: list[str] = []


class MailServerDown(Exception):
    pass


@app.task(name="send_welcome", queue="email", max_attempts=3)
def send_welcome(to: str, *, lang: str = "en") -> str:
    if to.endswith("@down.example"):
        raise MailServerDown(f"no answer for {to}")
    outbox.append(to)
    return f"sent to {to} ({lang})"


def sign_up(email: str, *, lang: str = "en") -> None:
    """The application's own code: save the user (not shown), then mail them."""
    send_welcome.defer(email, lang=lang)
