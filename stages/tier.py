"""Tier: global hot/cold placement of sessions.

The ``hot_sessions`` most recently modified sessions are hot, every other one is cold. The
order is mtime descending with the path ascending (``store.names.path_key``, UTF-16 code units,
the order queries visit sessions in) as tie-break, over *all* sessions of every agent, so a
session's tier never depends on the scope of a query.
"""

from __future__ import annotations

from collections.abc import Iterable

from store.names import path_key

__all__ = ["HOT", "COLD", "assign_tiers"]

HOT = "hot"
COLD = "cold"


def assign_tiers(sessions: Iterable[tuple[str, int]], hot_sessions: int) -> dict[str, str]:
    """Map each ``(path, mtime_ns)`` to ``"hot"`` or ``"cold"``."""
    ordered = sorted(sessions, key=lambda s: (-s[1], path_key(s[0])))
    return {path: (HOT if rank < hot_sessions else COLD) for rank, (path, _) in enumerate(ordered)}
