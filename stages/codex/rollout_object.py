"""Codex era A: the TypeScript CLI's rollout, one JSON object per file (formats §3.3).

::

    rollout-YYYY-MM-DD-<uuid>.json    {"session": {"timestamp", "id", "instructions"},
                                       "items": [ResponseItem, …]}    rewritten on each save

The object becomes the records a bare (era B) rollout gives, so ``read_codex`` and the
normalizer treat both alike: ``session`` is the bare meta line (``id`` and ``timestamp``, no
``type``) and each item a bare response item. A record's ``line`` and ``offset`` are where its
object starts in the file (pretty-printed files start each on a line of its own; objects that
share a line are told apart by ``read_codex`` as concatenated ones).

The file is rewritten whole, so a read can meet it half written: then nothing is read, line 1
is reported malformed (``malformed_line``), and the next save is indexed whole again.
"""

from __future__ import annotations

from typing import Any

import orjson

from stages.object_positions import Positions, value_starts
from stages.source import ParseResult, RawRecord

__all__ = ["parse_object"]


def parse_object(data: bytes) -> ParseResult:
    """The records of an era-A rollout; never raises."""
    lines = data.count(b"\n") + 1
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        value = None
    session = value.get("session") if isinstance(value, dict) else None
    items = value.get("items") if isinstance(value, dict) else None
    if not isinstance(session, dict) or not isinstance(items, list):
        return ParseResult(records=(), consumed=0, next_line=1, malformed_lines=(1,))
    text = data.decode("utf-8", "surrogatepass")
    starts = value_starts(text, frozenset({"session"}), frozenset({"items"}))
    at = Positions(text)
    objects: list[tuple[int, Any]] = [(starts.get("session", 0), session)]
    item_starts = starts.get("items")
    for k, item in enumerate(items):
        where = item_starts[k] if isinstance(item_starts, list) and k < len(item_starts) else 0
        objects.append((where, item))
    records = tuple(
        RawRecord(*at.line_and_offset(where), obj)
        for where, obj in sorted(objects, key=lambda pair: pair[0])
        if isinstance(obj, dict)
    )
    malformed = () if all(isinstance(item, dict) for item in items) else (1,)
    return ParseResult(
        records=records, consumed=len(data), next_line=lines, malformed_lines=malformed
    )
