"""Helpers every agent's normalizer shares (Pi, Claude Code, Codex).

The reference normalizer is TypeScript, so several rules are JavaScript semantics spelled out
in Python: what ``String.prototype.trim`` strips, what ``Boolean(x)`` calls true, what
``JSON.stringify`` prints for ``1.0``. Each helper names the JS behaviour it reproduces.

Text leaving a normalizer must encode as UTF-8: ``clean_text`` turns lone surrogates (which a
fallback JSON decoder can produce from a ``"\\ud83d"`` escape) into U+FFFD, and ``json_value``
does the same for every string of a JSON value before it is stored or serialized.

Nothing here classifies prose. ``is_path_key`` is a rule over JSON *keys* of typed tool
arguments, never over text.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from store.reasons import DUPLICATE_ENTRY_ID, DUPLICATE_OPERATION_ADDRESS
from store.records import NormalizedEntry
from store.redact import clear_cut

__all__ = [
    "ARGS_SUMMARY_SCALARS",
    "MAX_TIMESTAMP_MS",
    "clean_text",
    "collect_path_arguments",
    "cut_text",
    "duplicate_reasons",
    "files_touched",
    "first_timestamp_ms",
    "is_blank",
    "is_path_key",
    "js_number_text",
    "js_string",
    "js_trim",
    "js_truthy",
    "json_compact",
    "json_size",
    "json_value",
    "parse_timestamp_ms",
    "summarize_args",
    "utf8_size",
]

ARGS_SUMMARY_SCALARS = 400
"""A tool call's arguments appear in entry text as compact JSON cut to this many scalars."""

MAX_TIMESTAMP_MS = 8_640_000_000_000_000
"""The largest magnitude a JavaScript ``Date`` holds; beyond it a timestamp is unparseable."""

# Containers nested deeper than this are replaced by null in ``json_value``. orjson refuses to
# serialize past 255 levels, and at 200 levels the cut lies far beyond the first 400 scalars of
# any summary, so no visible text changes.
_MAX_JSON_DEPTH = 200

# ECMAScript WhiteSpace + LineTerminator: what String.prototype.trim removes. Python's
# str.strip() differs (it strips U+001C..U+001F and keeps U+FEFF).
_JS_WHITESPACE = (
    "\t\n\v\f\r \xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
    "\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)

# The integers orjson can serialize (i64 and u64).
_INT_MIN = -(2**63)
_INT_MAX = 2**64 - 1

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ONE_MS = timedelta(milliseconds=1)


def clean_text(text: str) -> str:
    """Return *text* with every lone surrogate replaced by U+FFFD (valid pairs are joined).

    The common case (already valid) costs one C-level encode and returns *text* itself; ASCII
    text (most of it), whose flag a str carries, not even that.
    """
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


def cut_text(text: str, max_scalars: int) -> tuple[str, bool]:
    """Cut *text* to at most *max_scalars* Unicode scalars; the flag says whether it was cut.

    A Python ``str`` indexes code points, so a slice never splits a character; the text is
    cleaned first so a surrogate pair spelled as two code points cannot be split either, and
    the result always encodes as UTF-8.
    """
    text = clean_text(text)
    limit = max(0, max_scalars)
    if len(text) <= limit:
        return text, False
    return text[:limit], True


def js_trim(text: str) -> str:
    """``String.prototype.trim``: strip ECMAScript whitespace and line terminators."""
    return text.strip(_JS_WHITESPACE)


def is_blank(text: str) -> bool:
    """True when *text* holds nothing but JS whitespace (``!text.trim()``)."""
    return not js_trim(text)


def js_truthy(value: object) -> bool:
    """``Boolean(value)`` for a JSON value: only null, false, 0, NaN and "" are false.

    Unlike Python, an empty list or object is true.
    """
    if value is None or value is False:
        return False
    if isinstance(value, bool):
        return True
    if isinstance(value, int):
        return value != 0
    if isinstance(value, float):
        return not (value == 0 or math.isnan(value))
    if isinstance(value, str):
        return value != ""
    return True


def js_number_text(value: int | float) -> str:
    """A JSON number as JavaScript prints it (``1.0`` → ``"1"``)."""
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e21:
            return str(int(value))
        return orjson.dumps(value).decode()
    return str(value)


def js_string(value: object) -> str:
    """The reference's ``asString``: strings as they are, null/absent as ``""``, scalars as JS
    prints them; containers (which no typed string field should hold) as ``""``."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        if isinstance(value, float) and not math.isfinite(value):
            return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
        return js_number_text(value)
    return ""


def json_value(value: object, _depth: int = 0) -> Any:
    """A copy of *value* that serializes exactly as ``JSON.stringify`` would see it.

    * strings (and keys) are cleaned of lone surrogates;
    * integral floats become ints (JSON has one number type: ``1.0`` is ``1``);
    * non-finite floats become null, as ``JSON.stringify(NaN)`` gives ``null``;
    * integers beyond 64 bits become floats (a JS parser reads them as doubles);
    * tuples become lists; any other non-JSON object becomes null.
    """
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, int):
        if _INT_MIN <= value <= _INT_MAX:
            return value
        try:
            return float(value)
        except OverflowError:
            return None
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        # JS prints integral doubles below 1e21 without a fraction; orjson only writes ints
        # that fit 64 bits, so the rare integral doubles beyond that stay floats.
        if value.is_integer() and _INT_MIN <= value <= _INT_MAX:
            return int(value)
        return value
    if _depth >= _MAX_JSON_DEPTH:
        return None
    if isinstance(value, dict):
        return {
            clean_text(k if isinstance(k, str) else js_string(k)): json_value(v, _depth + 1)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [json_value(v, _depth + 1) for v in value]
    return None


def json_compact(value: object) -> str:
    """Compact JSON of *value* as ``JSON.stringify`` prints it (key order kept, no spaces)."""
    return orjson.dumps(json_value(value)).decode()


def json_size(value: object) -> int:
    """UTF-8 byte size of ``json_compact(value)`` (``Buffer.byteLength(JSON.stringify(v))``)."""
    return len(orjson.dumps(json_value(value)))


def utf8_size(text: str) -> int:
    """UTF-8 byte length, counting a lone surrogate as the 3 bytes of U+FFFD (as Node does)."""
    return len(clean_text(text).encode("utf-8"))


def summarize_args(args: object, max_scalars: int = ARGS_SUMMARY_SCALARS) -> str:
    """Tool-call arguments as compact JSON cut to *max_scalars* scalars, ``…`` marking a cut.

    Pass only arguments that are present: an absent ``arguments`` key summarizes as ``""``
    at the call site (``JSON.stringify(undefined)``), while JSON null prints ``null``.
    """
    full = clean_text(json_compact(args))
    text, cut = cut_text(full, max_scalars)
    if cut:
        # A credential the cut would halve is left out whole: redaction cannot tell half a
        # token from ordinary text (store.redact.clear_cut).
        text = text[: clear_cut(full, len(text))]
    return f"{text}…" if cut else text


def parse_timestamp_ms(value: object) -> int | None:
    """Epoch milliseconds from an ISO-8601 string or a number; None if absent or unparseable.

    A numeric timestamp is taken as milliseconds (floored to an int). An ISO string without
    an offset is read as UTC, so the result never depends on the machine's time zone.
    Values outside the JS ``Date`` range give None.
    """
    ms: int
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        ms = value
    elif isinstance(value, float):
        if not math.isfinite(value):
            return None
        ms = math.floor(value)
    elif isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value.strip())
        except ValueError:
            return None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        ms = (moment - _EPOCH) // _ONE_MS
    else:
        return None
    return ms if abs(ms) <= MAX_TIMESTAMP_MS else None


def first_timestamp_ms(*candidates: object) -> int | None:
    """The first candidate that parses (record ``timestamp``, then ``message.timestamp``, …)."""
    for candidate in candidates:
        ms = parse_timestamp_ms(candidate)
        if ms is not None:
            return ms
    return None


_PATH_KEY_SUFFIXES = ("file", "files", "path", "paths")


def is_path_key(key: str) -> bool:
    """The typed-key rule ``/(?:file|path)s?$/i``: does this JSON key name a path argument?

    Case folding is ASCII-only, as a JavaScript ``/i`` pattern without the ``u`` flag does it.
    """
    tail = key[-5:]
    folded = "".join(chr(ord(c) + 32) if "A" <= c <= "Z" else c for c in tail)
    return folded.endswith(_PATH_KEY_SUFFIXES)


def collect_path_arguments(value: object) -> list[str]:
    """String values under path keys (``is_path_key``) anywhere inside *value*, trimmed.

    Arrays inherit the key that holds them, so ``{"files": ["a", "b"]}`` yields both; a bare
    top-level string has no key and yields nothing. Order is depth-first, in key order; the
    walk is iterative so hostile nesting cannot exhaust the stack. Duplicates are kept (see
    ``files_touched``).
    """
    found: list[str] = []
    stack: list[tuple[object, str | None]] = [(value, None)]
    while stack:
        node, key = stack.pop()
        if isinstance(node, str):
            if key is not None and is_path_key(key):
                trimmed = js_trim(node)
                if trimmed:
                    found.append(trimmed)
        elif isinstance(node, list | tuple):
            stack.extend((item, key) for item in reversed(node))
        elif isinstance(node, dict):
            stack.extend(
                (child, child_key)
                for child_key, child in reversed(list(node.items()))
                if isinstance(child_key, str)
            )
    return found


def files_touched(argument_values: Iterable[object]) -> tuple[str, ...]:
    """Paths named by typed path keys across several argument objects, de-duplicated in
    order of first appearance and cleaned for UTF-8."""
    seen: dict[str, None] = {}
    for args in argument_values:
        for path in collect_path_arguments(args):
            seen.setdefault(clean_text(path), None)
    return tuple(seen)


def duplicate_reasons(entries: Iterable[NormalizedEntry]) -> set[str]:
    """``duplicate_entry_id`` / ``duplicate_operation_address`` when two entries share a
    non-null entry id or operation address."""
    reasons: set[str] = set()
    entry_ids: set[str] = set()
    addresses: set[str] = set()
    for entry in entries:
        if entry.entry_id is not None:
            if entry.entry_id in entry_ids:
                reasons.add(DUPLICATE_ENTRY_ID)
            entry_ids.add(entry.entry_id)
        if entry.operation_address is not None:
            if entry.operation_address in addresses:
                reasons.add(DUPLICATE_OPERATION_ADDRESS)
            addresses.add(entry.operation_address)
    return reasons
