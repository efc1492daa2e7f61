"""Stage 1: bytes of a session file → one ``RawRecord`` per JSON object.

Lines are split on ``b"\\n"`` only (U+2028/U+2029 may sit inside strings). Bytes after the last
``\\n`` are withheld: a writer may be mid-line, and the next append picks them up. Everything
else that is not a JSON object is recorded in ``malformed_lines`` and skipped, never raised.

The fast path is one ``orjson.loads`` per line. Only a line orjson rejects takes the slow path,
in this order:

1. **Concatenated objects** (a Pi writer bug seen in real files): ``json.JSONDecoder.raw_decode``
   finds the boundaries, orjson decodes each piece again, so a value is the same whichever path
   produced it.
2. **Repair** (``repaired_lines``): a line strict JSON rejects only for its syntax is decoded
   after a documented, value-preserving repair — invalid UTF-8 becomes U+FFFD, a backslash that
   starts no JSON escape (``\\*`` left by redaction tools) stands for itself, a lone UTF-16
   surrogate escape becomes U+FFFD, and control characters inside strings are accepted. The
   line is recovered whole or not at all (``NaN``/``Infinity`` are not JSON and are not
   repaired). The repair reads JSON syntax only, never the text inside it.
Lines past ``MAX_LINE_BYTES``, or holding more than ``MAX_LINE_OBJECTS`` concatenated
objects, are ``oversized_lines``: skipped before (or as soon as) they cost more.

3. **Pretty-printed objects** (formats §3.10.9; Codex rollouts committed to repos): a line that
   is exactly ``{`` opens an object spread over the following lines, decoded as one record at
   that line. Until the lines that close it are complete, it is withheld like a partial line
   (``consumed`` stops before it), so an append parsed on its own sees what a whole parse sees.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any

import orjson

from stages.source import ParseResult, RawRecord

__all__ = ["parse", "repair"]


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")  # NaN and Infinity are values, not a syntax slip


# Bounds on one line, so a hostile file costs bounded memory and time (issue 22, item 8): a
# line longer than this is not decoded at all, and a line of concatenated objects stops at
# this many (three 10 MB lines of ``{}{}…`` took 1.9 GB and minutes, five million records).
# Both are ``oversized_lines``: skipped, and named ``oversized_line``. Real lines stay far
# below (the largest seen: a few MB of a base64 image in a Claude Code tool result).
MAX_LINE_BYTES = 64 << 20
MAX_LINE_OBJECTS = 10_000
# a withheld tail longer than this is not copied by the split of the complete lines
_SPLIT_TAIL = 1 << 20

_BOM = b"\xef\xbb\xbf"
_JSON_SPACE = b" \t\r"
_JSON_SPACE_STR = " \t\r"
_OPEN = b"{"
_BOUNDARIES = json.JSONDecoder()
_LENIENT = json.JSONDecoder(strict=False, parse_constant=_no_constant)
# A backslash and what follows it: a valid escape, a surrogate (pair), or nothing valid.
_ESCAPE = re.compile(
    r"\\(?:(u[dD][89abAB][0-9a-fA-F]{2})(\\u[dD][c-fC-F][0-9a-fA-F]{2})?"
    r"|(u[dD][c-fC-F][0-9a-fA-F]{2})|(u[0-9a-fA-F]{4}|[\"\\/bfnrt]))?"
)


def parse(
    data: bytes, *, base_offset: int = 0, first_line: int = 1, settled: bool = False
) -> ParseResult:
    """Parse the complete lines of ``data``.

    ``base_offset`` is the absolute file offset of ``data[0]`` and ``first_line`` the line number
    its first line has, so an append parsed on its own gets the offsets and line numbers a parse
    of the whole file would give.

    With *settled* (the caller saw no write for a while: no writer is mid-line), bytes after
    the last newline are read as one more line: a JSON object there is a record like any
    other (``tail_taken``), anything else is ``unterminated``, never silently dropped. Without
    it they are withheld and counted in ``withheld``.
    """
    if settled and data and not data.endswith(b"\n"):
        return _settled(data, base_offset, first_line)
    consumed = data.rfind(b"\n") + 1
    records: list[RawRecord] = []
    malformed: list[int] = []
    repaired: list[int] = []
    oversized: list[int] = []
    line_no = first_line
    start = 0
    loads = orjson.loads
    # the last piece is the withheld tail (b"" after a newline); a long one is not copied
    lines = (data if len(data) - consumed <= _SPLIT_TAIL else data[:consumed]).split(b"\n")[:-1]
    stream: _Stream | None = None
    skip = 0
    for line in lines:
        offset = base_offset + start
        at = start
        start += len(line) + 1
        number = line_no
        line_no += 1
        if skip:
            skip -= 1
            continue
        if offset == 0 and line.startswith(_BOM):
            line = line[len(_BOM) :]
        if len(line) > MAX_LINE_BYTES:
            oversized.append(number)
            continue
        try:
            value = loads(line)
        except orjson.JSONDecodeError:
            # Blank lines land here too; checking them only now keeps the common path copy-free.
            stripped = line.strip(_JSON_SPACE)
            if not stripped:
                continue
            if stripped == _OPEN:
                stream = stream or _Stream(data, consumed)
                try:
                    found = stream.object_at(at)
                except _Unfinished:
                    consumed, line_no = at, number  # withheld until the object is complete
                    break
                if found is not None:
                    records.append(RawRecord(number, offset, found[0]))
                    skip = found[1]
                    continue
            values, complete = _concatenated(line)
            if values is _TOO_MANY:
                oversized.append(number)
                continue
            if not complete:
                fixed, complete = _repaired(line)
                if fixed is _TOO_MANY:
                    oversized.append(number)
                    continue
                if complete:
                    values = fixed
                    repaired.append(number)
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
        repaired_lines=tuple(repaired),
        oversized_lines=tuple(oversized),
        withheld=bool(data[consumed:].strip(_JSON_SPACE + b"\n")),
    )


def _settled(data: bytes, base_offset: int, first_line: int) -> ParseResult:
    """``parse`` of *data* whose last line has no newline and no writer (see ``parse``)."""
    head = parse(data, base_offset=base_offset, first_line=first_line)
    if head.consumed < data.rfind(b"\n") + 1:  # an unfinished pretty-printed object
        return replace(head, withheld=False, unterminated=True)
    at = head.consumed
    if len(data) - at > MAX_LINE_BYTES:
        return replace(
            head,
            consumed=len(data),
            next_line=head.next_line + 1,
            withheld=False,
            oversized_lines=(*head.oversized_lines, head.next_line),
        )
    tail = parse(data[at:] + b"\n", base_offset=base_offset + at, first_line=head.next_line)
    return ParseResult(
        records=head.records + tail.records,
        consumed=len(data),
        next_line=tail.next_line,
        malformed_lines=head.malformed_lines,
        repaired_lines=head.repaired_lines + tail.repaired_lines,
        oversized_lines=head.oversized_lines + tail.oversized_lines,
        tail_taken=bool(tail.records),
        unterminated=bool(tail.malformed_lines),
    )


def repair(text: str) -> str:
    """*text* with every backslash that starts no JSON escape escaped itself and every lone
    surrogate escape replaced by ``\\ufffd`` (module docstring, step 2)."""
    return _ESCAPE.sub(_fix_escape, text)


def _fix_escape(m: re.Match[str]) -> str:
    if m.group(4) is not None:
        return m.group(0)
    if m.group(1) is not None:
        return m.group(0) if m.group(2) is not None else "\\ufffd"
    if m.group(3) is not None:
        return "\\ufffd"
    return "\\\\"


def _concatenated(line: bytes) -> tuple[list[dict[str, Any]], bool]:
    """The objects at the start of a line orjson rejected, and whether the whole line was objects.

    ``surrogateescape`` keeps undecodable bytes addressable; encoding a piece back gives its
    original bytes, which orjson then rejects if they are not valid UTF-8.
    """
    text = line.decode("utf-8", "surrogateescape")
    values: list[dict[str, Any]] = []
    index = _skip_space(text, 0)
    while index < len(text):
        if len(values) == MAX_LINE_OBJECTS:
            return _TOO_MANY, False
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


def _repaired(line: bytes) -> tuple[list[dict[str, Any]], bool]:
    """The objects of a line after the repair, all or nothing (module docstring, step 2).

    A value orjson cannot write back (it must be storable) makes the line malformed.
    """
    text = repair(line.decode("utf-8", "replace"))
    values: list[dict[str, Any]] = []
    index = _skip_space(text, 0)
    while index < len(text):
        if len(values) == MAX_LINE_OBJECTS:
            return _TOO_MANY, False
        try:
            value, index = _LENIENT.raw_decode(text, index)
            orjson.dumps(value)
        except (ValueError, RecursionError, TypeError):
            return [], False
        if type(value) is not dict:
            return [], False
        values.append(value)
        index = _skip_space(text, index)
    return values, bool(values)


# what the slow paths return for a line past MAX_LINE_OBJECTS (compared by identity)
_TOO_MANY: list[dict[str, Any]] = []


def _skip_space(text: str, index: int) -> int:
    while index < len(text) and text[index] in _JSON_SPACE_STR:
        index += 1
    return index


class _Unfinished(Exception):
    """The complete lines end inside an object that began on a line of its own."""


class _Stream:
    """The complete lines of a parse as one text, decoded once, for objects spread over lines.

    Positions are byte offsets into ``data``; a byte offset is turned into a text index by the
    number of characters the bytes before it decode to (tracked forward, asked in order).
    """

    def __init__(self, data: bytes, end: int) -> None:
        self.data = data
        self.text = data[:end].decode("utf-8", "surrogateescape")
        self.byte = 0
        self.char = 0
        self.last = len(self.text.rstrip())  # where only whitespace is left

    def object_at(self, at: int) -> tuple[dict[str, Any], int] | None:
        """The object starting at byte ``at`` and how many further lines it spans; None when
        no object of its own starts there. Raises ``_Unfinished`` when the text ends inside it."""
        if at < self.byte:
            self.byte = self.char = 0
        self.char += len(self.data[self.byte : at].decode("utf-8", "surrogateescape"))
        self.byte = at
        text, begin = self.text, self.char
        bom = 1 if at == 0 and text.startswith("\ufeff") else 0
        start = _skip_space(text, begin + bom)
        try:
            _, end = _BOUNDARIES.raw_decode(text, start)
        except json.JSONDecodeError as e:
            if e.pos >= self.last:
                raise _Unfinished from None
            return None
        except RecursionError:
            return None
        newline = text.find("\n", end)
        stop = len(text) if newline < 0 else newline
        if text[end:stop].strip(_JSON_SPACE_STR):
            return None  # something else shares the closing line: not a stream of objects
        try:
            value = orjson.loads(text[start:stop].encode("utf-8", "surrogateescape"))
        except orjson.JSONDecodeError:
            return None
        if type(value) is not dict:
            return None
        return value, text.count("\n", begin, stop)
