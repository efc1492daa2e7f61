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

import json
from typing import Any, Final

import orjson

from stages.source import ParseResult, RawRecord

__all__ = ["parse_object"]

_DECODER: Final = json.JSONDecoder()
_SPACE: Final = " \t\r\n"


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
    starts = _starts(text)
    at = _Positions(text)
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


def _starts(text: str) -> dict[str, Any]:
    """Where the top-level ``session`` value and each element of ``items`` start (str
    indices); whatever cannot be located is left out."""
    out: dict[str, Any] = {}
    try:
        i = _skip(text, 0)
        if text[i] != "{":
            return out
        i = _skip(text, i + 1)
        while i < len(text) and text[i] != "}":
            key, i = _DECODER.raw_decode(text, i)
            i = _skip(text, i)
            i = _skip(text, i + 1)  # the ":"
            if key == "items" and text[i] == "[":
                out["items"] = found = []
                i = _skip(text, i + 1)
                while text[i] != "]":
                    found.append(i)
                    _, i = _DECODER.raw_decode(text, i)
                    i = _skip(text, i)
                    if text[i] == ",":
                        i = _skip(text, i + 1)
                i += 1
            else:
                if key == "session":
                    out["session"] = i
                _, i = _DECODER.raw_decode(text, i)
            i = _skip(text, i)
            if i < len(text) and text[i] == ",":
                i = _skip(text, i + 1)
    except (ValueError, IndexError):
        pass  # orjson read it whole: only positions are missing, and they default to 0
    return out


def _skip(text: str, i: int) -> int:
    while i < len(text) and text[i] in _SPACE:
        i += 1
    return i


class _Positions:
    """(line, byte offset of that line) of str indices, asked in increasing order."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.index = 0  # str index reached
        self.line = 1
        self.line_start = 0  # str index where that line starts
        self.line_byte = 0  # its byte offset
        self.byte = 0  # byte offset of self.index

    def line_and_offset(self, where: int) -> tuple[int, int]:
        text = self.text
        while self.index < where:
            newline = text.find("\n", self.index, where)
            stop = where if newline < 0 else newline + 1
            self.byte += len(text[self.index : stop].encode("utf-8", "surrogatepass"))
            self.index = stop
            if newline >= 0:
                self.line += 1
                self.line_start, self.line_byte = stop, self.byte
        return self.line, self.line_byte
