"""The no-I/O core: what to ask of the database, and what the answer means."""
