"""JSON in and out, lossless for the strings the file system gives us.

orjson is fast but refuses lone surrogates, and a file name that is not UTF-8 is one
(``os.fsdecode`` maps each stray byte to U+DC80-U+DCFF). Such a name must still reach a user,
and a call token naming it must come back to us: the standard library writes it as a
``\\udcXX`` escape and reads that escape back, so the rare value that orjson refuses takes
that slower path and the common one stays fast.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

__all__ = ["dumps", "loads"]


def dumps(obj: Any, *, indent: bool = False) -> bytes:
    """Compact (or two-space indented) JSON bytes of *obj*; ASCII-escaped when it holds a
    lone surrogate."""
    try:
        return orjson.dumps(obj, option=orjson.OPT_INDENT_2 if indent else None)
    except orjson.JSONEncodeError:
        text = json.dumps(
            obj, ensure_ascii=True, indent=2 if indent else None,
            separators=(",", ": ") if indent else (",", ":"),
        )  # fmt: skip
        return text.encode("ascii")


def loads(data: bytes | str) -> Any:
    """The value of JSON *data*, including ``\\udcXX`` escapes that orjson refuses.

    Raises ``ValueError`` (``orjson.JSONDecodeError`` or ``json.JSONDecodeError``, both
    subclasses) for anything that is not JSON, and for JSON nested too deeply to read.
    """
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        try:
            return json.loads(data)
        except RecursionError:  # nested deeper than orjson's 1024 levels: hostile, not data
            raise ValueError("JSON nested too deeply") from None
