"""Errors the query side raises.

Two kinds of failure reach a caller, and they travel differently:

* a malformed request (an unknown argument, a value out of range, ``queryMatch`` outside
  literal mode, …) raises ``InvalidArgument``: the call itself is wrong, like a schema
  violation, and the CLI exits 2;
* a well-formed request the index cannot serve (a stale pointer, an ambiguous or unknown
  session, an address that is not there) is *answered*: the result object carries the seed's
  ``error`` body, and the CLI exits 6 (``store.exits``).

``store.errors.SnapshotMissing`` (nothing indexed yet) passes through unchanged; the CLI
turns it into exit 4 with the command to run.
"""

from __future__ import annotations

__all__ = ["InvalidArgument", "QueryError"]


class QueryError(Exception):
    """Base class for everything the query side raises."""


class InvalidArgument(QueryError, ValueError):
    """The request does not satisfy the action's argument schema; the message says how."""
