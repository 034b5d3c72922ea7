"""Fake fastapi (README.md)."""
__version__ = "0.0-fake"
