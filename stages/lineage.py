"""Lineage: which records make up a session's active branch (or all of them).

Placeholder signature; the implementation lands with the parse/lineage work.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Lineage"]


@dataclass(frozen=True, slots=True)
class Lineage:
    """The records one branch mode selects.

    ``selected`` are ``SourceRecord.position`` values in file order; ``path_ids`` the active
    path root → leaf (empty for ``all``); ``fingerprint`` blake3 hex over
    ``{"branches","leafId","ids"}``; ``reasons`` e.g. ``invalid_parent_graph``,
    ``dangling_parent``.
    """

    branches: str
    leaf_id: str | None
    path_ids: tuple[str, ...]
    selected: tuple[int, ...]
    fingerprint: str
    reasons: tuple[str, ...] = ()
