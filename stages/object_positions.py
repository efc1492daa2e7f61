"""Where the values of a JSON object written whole start in its text, for session files that
hold one object (Codex era A's ``rollout-*.json``, Gemini CLI's legacy ``session-*.json``): a
record's ``line`` and ``offset`` are where its object starts, so ``expand`` and the journal can
point into a pretty-printed file as into a JSONL one.
"""

from __future__ import annotations

import json
from typing import Any, Final

__all__ = ["Positions", "value_starts"]

_DECODER: Final = json.JSONDecoder()
_SPACE: Final = " \t\r\n"


def value_starts(text: str, singles: frozenset[str], lists: frozenset[str]) -> dict[str, Any]:
    """Where the top-level values named in *singles* start, and where each element of the
    top-level arrays named in *lists* starts (str indices); whatever cannot be located is
    left out (the caller defaults it)."""
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
            if key in lists and text[i] == "[":
                out[key] = found = []
                i = _skip(text, i + 1)
                while text[i] != "]":
                    found.append(i)
                    _, i = _DECODER.raw_decode(text, i)
                    i = _skip(text, i)
                    if text[i] == ",":
                        i = _skip(text, i + 1)
                i += 1
            else:
                if key in singles:
                    out[key] = i
                _, i = _DECODER.raw_decode(text, i)
            i = _skip(text, i)
            if i < len(text) and text[i] == ",":
                i = _skip(text, i + 1)
    except (ValueError, IndexError):
        pass  # the object parsed whole elsewhere: only positions are missing
    return out


def _skip(text: str, i: int) -> int:
    while i < len(text) and text[i] in _SPACE:
        i += 1
    return i


class Positions:
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
