"""Shared pytest fixtures. Fixtures for a subsystem live in tests/<subsystem>/conftest.py."""
