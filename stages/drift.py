"""No silent drift: the record types an adapter does not know, counted, never guessed at.

Each adapter holds fixed sets of the type names it knows (line types, item types, content-block
types) and tallies every other one under a qualified name: ``line:<type>``, ``item:<type>``,
``event:<type>``, ``block:<type>``, ``role:<role>``. The counts travel with the session's state
(``SessionState.unknown_records``, with the writer version) and ``pipeline status`` shows them.

An unknown record that *could* hold conversation text also marks the session's coverage
``unknown_record_type``. "Could" is decided from typed structure only: the record carries a
``message``, ``content`` or ``text`` key (or is a content block / message role, which is where
text lives). Prose is never looked at.

A session that yields no entry while its file holds records is ``no_entries``, never a clean
empty session (``stages.normalize``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any, Final

from store.reasons import UNKNOWN_RECORD_TYPE

__all__ = ["Drift", "holds_text", "versioned"]

_TEXT_KEYS: Final = ("message", "content", "text")


def holds_text(value: Mapping[str, Any]) -> bool:
    """Whether a record of an unknown type has a field conversation text lives in."""
    return any(key in value for key in _TEXT_KEYS)


class Drift:
    """The unknown types one read met, and whether any of them could hold text."""

    __slots__ = ("counts", "text_bearing")

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.text_bearing = False

    def note(self, kind: str, name: object, *, text: bool) -> None:
        """Count one record of unknown type *name* (of *kind*: line, item, block, …)."""
        self.counts[f"{kind}:{name if isinstance(name, str) else type(name).__name__}"] += 1
        self.text_bearing = self.text_bearing or text

    def check(self, kind: str, name: object, known: frozenset[str], value: object) -> bool:
        """Note *name* unless it is in *known*; True when it is known. *value* is the record
        (its text keys decide whether the unknown one could hold text)."""
        if isinstance(name, str) and name in known:
            return True
        self.note(kind, name, text=isinstance(value, Mapping) and holds_text(value))
        return False

    def blocks(self, content: object, known: frozenset[str]) -> None:
        """Check the ``type`` of every content block of a list *content* (a block is where
        text lives, so an unknown one always counts as text-bearing)."""
        if not isinstance(content, list):
            return
        for block in content:
            if isinstance(block, dict):
                name = block.get("type")
                if not (isinstance(name, str) and name in known):
                    self.note("block", name, text=True)

    def reasons(self) -> set[str]:
        return {UNKNOWN_RECORD_TYPE} if self.text_bearing else set()

    def items(self) -> tuple[tuple[str, int], ...]:
        return tuple(sorted(self.counts.items()))


def versioned(
    version: str, unknown: Iterable[tuple[str, int]], before: Iterable[tuple[str, str, int]] = ()
) -> tuple[tuple[str, str, int], ...]:
    """``SessionState.unknown_records``: *before* plus *unknown* counted under *version*."""
    total: Counter[tuple[str, str]] = Counter()
    for v, name, n in before:
        total[(v, name)] += n
    for name, n in unknown:
        total[(version, name)] += n
    return tuple((v, name, n) for (v, name), n in sorted(total.items()))
