"""The normalize stage's result type (shared by the per-agent normalizers)."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from stages.source import SourceRecord
from store.records import NormalizedEntry

__all__ = ["EntryMemo", "NormalizeResult", "record_key"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class NormalizeResult:
    """Entries with *complete* text (display truncation happens in digest) and the
    normalization coverage reasons (``duplicate_entry_id``, ``duplicate_operation_address``,
    ``duplicate_branch_fact_address``, …), sorted and unique."""

    entries: tuple[NormalizedEntry, ...]
    reasons: tuple[str, ...] = ()


class EntryMemo:
    """What a normalizer made of records it saw before, keyed by the records themselves.

    The in-memory append path (``stages.rederive``) normalizes a growing session again at
    every appended line; with a memo only the new records, and a reply a new line continues,
    cost any work, instead of every record of the history. A cache only: a normalizer returns
    the same entries with or without it. Keys hold ``id()`` of records, so each value pins the
    records it was made from and a hit checks they are the very same objects (an id is only
    unique while its object lives). Bound to one policy: another policy forgets everything.
    """

    __slots__ = ("_derived", "_found", "_indexed", "_policy", "_texts")

    def __init__(self, *, texts: bool = False) -> None:
        self._found: dict[Hashable, tuple[tuple[object, ...], tuple[NormalizedEntry, ...]]] = {}
        self._indexed: dict[int, tuple[NormalizedEntry, NormalizedEntry]] = {}
        self._derived: dict[int, tuple[NormalizedEntry, NormalizedEntry]] = {}
        self._policy: object = None
        # text -> what ``text`` made of it, when kept (*texts*): a memo for one build only,
        # since a long-lived one would keep every version of a growing text
        self._texts: dict[str, Any] | None = {} if texts else None

    def bind(self, policy: object) -> None:
        if policy != self._policy:
            self._found.clear()
            self._indexed.clear()
            self._derived.clear()
            if self._texts is not None:
                self._texts.clear()
            self._policy = policy

    def text(self, text: str, make: Callable[[str], T]) -> T:
        """``make(text)``, made once per text in a memo that keeps texts: a normalizer that
        makes new entries for the records two views share (Pi's) gives them equal texts,
        which ``derived`` (by entry object) cannot tell."""
        if self._texts is None:
            return make(text)
        found: T | None = self._texts.get(text)
        if found is None:
            found = self._texts[text] = make(text)
        return found

    def derived(
        self, entry: NormalizedEntry, make: Callable[[NormalizedEntry], NormalizedEntry]
    ) -> NormalizedEntry:
        """``make(entry)``, made once per entry object (redaction, ``stages.redaction``)."""
        found = self._derived.get(id(entry))
        if found is not None and found[0] is entry:
            return found[1]
        made = make(entry)
        self._derived[id(entry)] = (entry, made)
        return made

    def at(self, entry: NormalizedEntry, index: int) -> NormalizedEntry:
        """*entry* with ``index`` set, the same object as last time when nothing moved (so
        comparing it with the entries stored before is an identity check)."""
        if entry.index == index:
            return entry
        found = self._indexed.get(id(entry))
        if found is not None and found[0] is entry and found[1].index == index:
            return found[1]
        moved = replace(entry, index=index)
        self._indexed[id(entry)] = (entry, moved)
        return moved

    def get(self, key: Hashable, pinned: tuple[object, ...]) -> tuple[NormalizedEntry, ...] | None:
        found = self._found.get(key)
        if found is None or len(found[0]) != len(pinned):
            return None
        if not all(a is b for a, b in zip(found[0], pinned, strict=True)):
            return None
        return found[1]

    def put(
        self, key: Hashable, pinned: tuple[object, ...], entries: tuple[NormalizedEntry, ...]
    ) -> None:
        self._found[key] = (pinned, entries)

    def __len__(self) -> int:
        return len(self._found)


def record_key(record: SourceRecord) -> tuple[object, ...]:
    """What of a record the entries a normalizer makes of it depend on, for ``EntryMemo``.
    An adapter makes new records over the same parsed lines at every read, so the line's
    value dict (kept by the caller, pinned by the memo) stands for its content; threading
    may give the line another parent or sidechain flag, so those are in the key too."""
    return (
        id(record.value),
        record.line,
        record.offset,
        record.id,
        record.parent_id,
        record.kind,
        record.sidechain,
    )
