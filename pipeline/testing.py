"""Test doubles shipped with the code: they keep the invariants of what they replace.

* ``MemoryJournal`` — the journal in a list: dense positions from ``start_at``, trimmed
  positions refuse to be read again (CorruptRecord), as ``store.journal.FileJournal`` does.
* ``FakeClock`` — a monotonic clock that moves only when told to.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from store.codec import encode
from store.errors import CorruptRecord
from store.journal import JournalStats
from store.records import SourceEvent

__all__ = ["FakeClock", "MemoryJournal"]


class MemoryJournal:
    """The ``store.journal.Journal`` protocol in memory."""

    def __init__(self, start_at: int = 0) -> None:
        self.bytes_written = 0
        self._first = start_at
        self._events: list[SourceEvent] = []

    def append(self, events: Sequence[SourceEvent]) -> list[SourceEvent]:
        start = self._first + len(self._events)
        placed = [replace(e, position=start + i) for i, e in enumerate(events)]
        self._events.extend(placed)
        self.bytes_written += sum(len(encode(e)) for e in placed)
        return placed

    def read(self, after: int, limit: int = 1000) -> list[SourceEvent]:
        if after + 1 < self._first and self._events:
            raise CorruptRecord("<memory journal>", f"position {after + 1} was trimmed")
        skip = max(0, after + 1 - self._first)
        return self._events[skip : skip + limit]

    def head(self) -> int:
        return self._first + len(self._events) - 1

    def trim(self, through: int) -> int:
        # Like FileJournal, keep the newest event so the head survives.
        drop = min(max(0, through + 1 - self._first), max(0, len(self._events) - 1))
        del self._events[:drop]
        self._first += drop
        return drop

    def statistics(self) -> JournalStats:
        return JournalStats(
            first=self._first,
            head=self.head(),
            segments=1 if self._events else 0,
            bytes=self.bytes_written,
        )

    def close(self) -> None:
        pass


class FakeClock:
    """``clock()`` returns the current fake time in seconds; ``advance`` moves it."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("a monotonic clock never goes back")
        self.now += seconds
