"""Integrations with frameworks: each subpackage needs its framework's extra."""
