"""Errors raised by the stages.

* StageError          base class
  + BadInput          a session's bytes cannot be read as that agent's format at all

Per-record problems are never raised: they become coverage reasons on the session.
"""

from __future__ import annotations

__all__ = ["BadInput", "StageError"]


class StageError(Exception):
    """Base class for everything the stages raise."""


class BadInput(StageError, ValueError):
    """The input is not a session of the expected kind; the message says why."""
