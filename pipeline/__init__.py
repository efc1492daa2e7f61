"""sessiondex write side: configuration, indexing runs, status, and the `pipeline` CLI."""

__version__ = "0.1.0"
