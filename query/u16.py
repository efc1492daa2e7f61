"""Text measured the way the seed measures it: in UTF-16 code units.

The seed's limits (``snippetChars``, ``maxChars``, ``textRange``, the 30,000-character
envelope, metadata bounds) are JavaScript string lengths, i.e. UTF-16 code units. A Python
``str`` indexes code points, so an astral character (an emoji, say) is one index here and two
units there. Every bound and every offset the query side hands out is in UTF-16 units, so a
``textRange``/``textOffset`` continuation means the same thing to a JavaScript client, and a
cut never lands between the two halves of a surrogate pair.

Text without astral characters (almost all of it) takes a fast path where units and code
points coincide.
"""

from __future__ import annotations

import json
from typing import Any, Final

import orjson

__all__ = [
    "ELLIPSIS",
    "bounded",
    "first_code_point_units",
    "is_low_surrogate_at",
    "json_length",
    "u16len",
    "u16slice",
]

ELLIPSIS: Final = "…"
_HIGH_FIRST: Final = 0xD800
_HIGH_LAST: Final = 0xDBFF
_LOW_FIRST: Final = 0xDC00
_LOW_LAST: Final = 0xDFFF


def _units(text: str) -> bytes:
    # surrogatepass keeps lone surrogates (they can arrive from JSON) as one unit each
    return text.encode("utf-16-le", "surrogatepass")


def u16len(text: str) -> int:
    """The JavaScript ``length`` of *text*."""
    if text.isascii():
        return len(text)
    return len(_units(text)) // 2


def _unit(units: bytes, i: int) -> int:
    return units[2 * i] | (units[2 * i + 1] << 8)


def u16slice(text: str, start: int, end: int) -> str:
    """``text[start:end]`` in UTF-16 units, never splitting a surrogate pair.

    A start inside a pair moves forward past its low half; an end inside a pair moves back
    before its high half (the seed's ``safeSlice``).
    """
    if text.isascii():
        return text[max(0, start) : max(0, end)]
    units = _units(text)
    total = len(units) // 2
    if total == len(text):  # no astral characters: units are code points
        return text[max(0, start) : max(0, end)]
    s = max(0, start)
    e = min(total, end)
    if 0 < s < total and _LOW_FIRST <= _unit(units, s) <= _LOW_LAST:
        s += 1
    if 0 < e < total and _HIGH_FIRST <= _unit(units, e - 1) <= _HIGH_LAST:
        e -= 1
    if e <= s:
        return ""
    return units[2 * s : 2 * e].decode("utf-16-le", "surrogatepass")


def is_low_surrogate_at(text: str, i: int) -> bool:
    """True when UTF-16 unit *i* of *text* is the second half of a surrogate pair."""
    if text.isascii():
        return False
    units = _units(text)
    return 0 <= i < len(units) // 2 and _LOW_FIRST <= _unit(units, i) <= _LOW_LAST


def first_code_point_units(text: str) -> int:
    """How many units the first character of *text* takes (0, 1 or 2)."""
    if not text:
        return 0
    return 2 if ord(text[0]) > 0xFFFF else 1


def bounded(value: str | None, limit: int = 512) -> str | None:
    """A metadata string cut to *limit* units: ``slice(0, limit - 1) + "…"`` when longer."""
    if value is None or u16len(value) <= limit:
        return value
    return u16slice(value, 0, max(1, limit - 1)) + ELLIPSIS


def json_length(obj: Any) -> int:
    """``JSON.stringify(obj).length``: compact JSON, measured in UTF-16 units."""
    try:
        data = orjson.dumps(obj)
    except orjson.JSONEncodeError:  # a lone surrogate: orjson refuses, the stdlib does not
        return u16len(json.dumps(obj, ensure_ascii=False, separators=(",", ":")))
    if data.isascii():
        return len(data)
    return u16len(data.decode("utf-8"))
