"""Stage 1: bytes of a session file → one ``RawRecord`` per JSON object.

Lines are split on ``b"\\n"`` only (U+2028/U+2029 may sit inside strings). Bytes after the last
``\\n`` are withheld: a writer may be mid-line, and the next append picks them up. Everything
else that is not a JSON object is recorded in ``malformed_lines`` and skipped, never raised.

The fast path is one ``orjson.loads`` per line. Only a line orjson rejects takes the slow path,
which finds the boundaries of several concatenated objects (a Pi writer bug seen in real files)
with ``json.JSONDecoder.raw_decode`` and then decodes each piece with orjson again, so a value is
the same whichever path produced it.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

from stages.source import ParseResult, RawRecord

__all__ = ["parse"]

_BOM = b"\xef\xbb\xbf"
_JSON_SPACE = b" \t\r"
_JSON_SPACE_STR = " \t\r"
_BOUNDARIES = json.JSONDecoder()


def parse(data: bytes, *, base_offset: int = 0, first_line: int = 1) -> ParseResult:
    """Parse the complete lines of ``data``.

    ``base_offset`` is the absolute file offset of ``data[0]`` and ``first_line`` the line number
    its first line has, so an append parsed on its own gets the offsets and line numbers a parse
    of the whole file would give.
    """
    consumed = data.rfind(b"\n") + 1
    records: list[RawRecord] = []
    malformed: list[int] = []
    line_no = first_line
    start = 0
    loads = orjson.loads
    # The last piece of the split is the withheld tail (b"" when data ends with a newline).
    for line in data.split(b"\n")[:-1]:
        offset = base_offset + start
        start += len(line) + 1
        number = line_no
        line_no += 1
        if offset == 0 and line.startswith(_BOM):
            line = line[len(_BOM) :]
        try:
            value = loads(line)
        except orjson.JSONDecodeError:
            # Blank lines land here too; checking them only now keeps the common path copy-free.
            if not line.strip(_JSON_SPACE):
                continue
            values, complete = _concatenated(line)
            records.extend(RawRecord(number, offset, v) for v in values)
            if not complete:
                malformed.append(number)
            continue
        if type(value) is dict:
            records.append(RawRecord(number, offset, value))
        else:
            malformed.append(number)
    return ParseResult(
        records=tuple(records),
        consumed=consumed,
        next_line=line_no,
        malformed_lines=tuple(malformed),
    )


def _concatenated(line: bytes) -> tuple[list[dict[str, Any]], bool]:
    """The objects at the start of a line orjson rejected, and whether the whole line was objects.

    ``surrogateescape`` keeps undecodable bytes addressable; encoding a piece back gives its
    original bytes, which orjson then rejects if they are not valid UTF-8.
    """
    text = line.decode("utf-8", "surrogateescape")
    values: list[dict[str, Any]] = []
    index = _skip_space(text, 0)
    while index < len(text):
        try:
            _, end = _BOUNDARIES.raw_decode(text, index)
            value = orjson.loads(text[index:end].encode("utf-8", "surrogateescape"))
        except (ValueError, RecursionError):
            # ValueError covers both decoders' JSONDecodeError; deep nesting recurses in json.
            return values, False
        if type(value) is not dict:
            return values, False
        values.append(value)
        index = _skip_space(text, end)
    return values, bool(values)


def _skip_space(text: str, index: int) -> int:
    while index < len(text) and text[index] in _JSON_SPACE_STR:
        index += 1
    return index
