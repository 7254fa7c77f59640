"""Integration tests: skiplock with what surrounds it (the command line, Django projects,
worker processes, the pytest plugin, the embedded server, scripts/), most on a database
server through the suite's ``url`` fixture (tests/conftest.py)."""
