"""Checks on the code and the package, not on behaviour: ruff, mypy, the layer contracts,
the generated sync modules, the sync/async API parity, and the sdist and wheels as a user
installs them."""
