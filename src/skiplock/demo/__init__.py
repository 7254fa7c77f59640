"""``skiplock demo`` and its embedded PostgreSQL."""
