"""hpcsched's version: the one spelling (pyproject.toml reads it from here)."""

__version__ = "0.1.0"
