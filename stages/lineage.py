"""Stage 2: which records of a session make up its active branch, or all of them.

``active`` follows Pi's persisted semantics: records with an id are nodes, a repeated id resolves
to its last record, the leaf is the last leaf candidate in file order, and the path runs from the
leaf up ``parent_id`` links to a root. Unlike Pi, a break in the graph is never silent:

* a parent id that names no record (a line lost or never written) is bridged to the leaf
  candidate before the child in file order, with ``bridged_parent``: one bad line never cuts the
  conversation above it off the path. Pi itself stops there; the Claude adapter bridges the same
  way before threading (``stages.claude.source``, step 2). With nothing before it, the walk ends
  with ``dangling_parent``;
* a parent id already on the path ends the walk with ``invalid_parent_graph``;
* a record that names itself as parent is a root, as in Pi's ``getTree``.

Sidechain records (Claude subagent lines written inline in the parent file) are neither nodes
nor leaves of the main path, but they are the session's work, not an abandoned branch: every
sidechain leaf candidate is selected in ``active`` too, after the main path in the fingerprint's
ids. The walk is iterative and O(records): sessions can be 100,000 records deep.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass

import orjson
from blake3 import blake3

from stages.errors import BadInput
from stages.source import SourceRecord, SourceSession
from store.reasons import BRIDGED_PARENT, DANGLING_PARENT, INVALID_PARENT_GRAPH

__all__ = ["BRANCH_MODES", "Lineage", "fingerprint", "fingerprint_payload", "lineage"]

BRANCH_MODES = ("active", "all")


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


def lineage(session: SourceSession, branches: str) -> Lineage:
    """Select the records of ``session`` for ``branches`` (``"active"`` or ``"all"``).

    Raises ``BadInput`` only for an unknown branch mode (a caller's mistake, not the file's).
    """
    if branches == "all":
        return Lineage(
            branches=branches,
            leaf_id=None,
            path_ids=(),
            selected=tuple(r.position for r in session.records),
            fingerprint=fingerprint(branches, None, ()),
        )
    if branches != "active":
        raise BadInput(f"unknown branch mode {branches!r}; expected one of {BRANCH_MODES}")
    return _active(session.records)


def fingerprint(branches: str, leaf_id: str | None, ids: Sequence[str]) -> str:
    """blake3 hex of ``fingerprint_payload`` (our own hash; Pi Fabric uses SHA-256)."""
    return blake3(fingerprint_payload(branches, leaf_id, ids)).hexdigest()


def fingerprint_payload(branches: str, leaf_id: str | None, ids: Sequence[str]) -> bytes:
    """The bytes hashed: compact JSON with keys in Pi Fabric's order, as ``JSON.stringify``."""
    return orjson.dumps({"branches": branches, "leafId": leaf_id, "ids": list(ids)})


def _active(records: Sequence[SourceRecord]) -> Lineage:
    by_id: dict[str, SourceRecord] = {}
    side: dict[str, SourceRecord] = {}
    leaf_id: str | None = None
    for record in records:
        if record.id is None:
            continue
        if record.sidechain:
            side[record.id] = record
            continue
        by_id[record.id] = record
        if record.leaf_candidate:
            leaf_id = record.id
    # A subagent's lines are its own conversation, not an abandoned branch of the parent's.
    side_records = sorted(
        (r for i, r in side.items() if r.leaf_candidate and i not in by_id),
        key=lambda r: r.position,
    )
    side_ids = [r.id for r in side_records if r.id is not None]
    side_positions = [r.position for r in side_records]
    if leaf_id is None:
        only_side = tuple(side_positions)
        return Lineage("active", None, (), only_side, fingerprint("active", None, side_ids))

    # The leaf names an id; like every id it resolves to the last record holding it.
    current = by_id[leaf_id]
    walked = [leaf_id]
    seen = {leaf_id}
    reasons: list[str] = []
    before: list[int] | None = None
    while current.parent_id is not None and current.parent_id != walked[-1]:
        parent = by_id.get(current.parent_id)
        if parent is None:
            if before is None:
                before = sorted(r.position for r in by_id.values() if r.leaf_candidate)
                at_position = {r.position: r for r in by_id.values()}
            k = bisect_left(before, current.position)
            if k == 0:
                reasons.append(DANGLING_PARENT)
                break
            parent = at_position[before[k - 1]]
            if BRIDGED_PARENT not in reasons:
                reasons.append(BRIDGED_PARENT)
        parent_id = parent.id
        assert parent_id is not None  # a key of by_id
        if parent_id in seen:
            reasons.append(INVALID_PARENT_GRAPH)
            break
        walked.append(parent_id)
        seen.add(parent_id)
        current = parent
    path_ids = tuple(reversed(walked))
    selected = tuple(sorted([*(by_id[i].position for i in path_ids), *side_positions]))
    return Lineage(
        branches="active",
        leaf_id=leaf_id,
        path_ids=path_ids,
        selected=selected,
        fingerprint=fingerprint("active", leaf_id, [*path_ids, *side_ids]),
        reasons=tuple(reasons),
    )
