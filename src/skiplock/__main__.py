"""``python -m skiplock``: the same as the ``skiplock`` command."""

from skiplock.cli import main

raise SystemExit(main())
