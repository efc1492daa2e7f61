"""Record checksums: a record file's name is the blake3 of its bytes, so a flipped byte is
found by hashing them again.

Checked once per record file per process (``FIRST_LOADS``): records never change once
written, so a record that matched on its first load stays good while the process keeps it,
and hashing costs about what reading does, once. The pipeline's scrub
(``pipeline.scrub``) checks the records it would reuse without loading them and builds what
fails again; the query side (``store.reader.Snapshot.load``) refuses a damaged record, so
its session is named unavailable instead of answering from wrong bytes.

The check lives here, apart from each record's wire form (``store.records``), because it
reads the file's bytes only: any record kind, any schema version.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from pathlib import Path
from typing import Final

import blake3

from store.files import read_quietly
from store.layout import IndexLayout, is_record_name

__all__ = ["FIRST_LOADS", "FirstLoads", "intact", "matches"]


def matches(name: str, data: bytes) -> bool:
    """Whether *data* are the bytes the record name *name* addresses."""
    return blake3.blake3(data).hexdigest() == name.partition(".")[0]


def intact(layout: IndexLayout, name: str) -> bool:
    """Whether record *name* of the index exists and holds the bytes its name addresses."""
    if not is_record_name(name):
        return False
    try:
        return matches(name, read_quietly(layout.record_path(name)))
    except OSError:
        return False


class FirstLoads:
    """The record files whose bytes this process found intact (bounded, most recent kept:
    one forgotten is hashed again on its next load, nothing worse)."""

    def __init__(self, limit: int = 200_000) -> None:
        self._limit = limit
        self._seen: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()

    def check(self, path: Path, name: str, data: bytes) -> bool:
        """True when *data* (read from *path*) match *name*; hashed only the first time."""
        key = str(path)
        with self._lock:
            if key in self._seen:
                self._seen.move_to_end(key)
                return True
        if not matches(name, data):
            return False
        with self._lock:
            self._seen[key] = None
            while len(self._seen) > self._limit:
                self._seen.popitem(last=False)
        return True

    def forget(self) -> None:
        with self._lock:
            self._seen.clear()


FIRST_LOADS: Final = FirstLoads()
