"""Sessions that kill the index worker working on them, set aside until their file changes.

::

    index worker, before each session          ─► Breadcrumb: path, size, mtime_ns
                  after it                      ─► Breadcrumb cleared
    the worker dies (kill -9, the OOM killer, a stall the supervisor ended)
        supervisor reads its Breadcrumb         ─► Quarantine.crashed(...)
        the same file (same size and mtime) killed a worker CRASHES_TO_QUARANTINE times
                                                ─► Quarantined, handed to the restarted workers
    a restarted worker meets that file again, unchanged ─► skipped as index_error, not indexed
                                 changed since          ─► indexed again (a new chance)

Without this a restarted worker resumes at the same journal event, dies on the same session,
and its shard of sessions never moves again. The supervisor keeps the quarantine in its run
state (``Quarantined.to_state``), and a new supervisor takes back every entry whose file is
still unchanged (``restore``), so restarting the service does not cost two more deaths.

The breadcrumb is a few KiB of shared memory written without a lock: only the worker writes
it, and the supervisor reads it after the worker is dead, so a read never races a write.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

__all__ = [
    "CRASHES_TO_QUARANTINE",
    "Breadcrumb",
    "Quarantine",
    "Quarantined",
    "file_stamp",
    "restore",
]

# Deaths on the same unchanged file before it is set aside: one could be bad luck (a kill
# aimed at the process, memory taken by something else), two in a row is the file.
CRASHES_TO_QUARANTINE: Final = 2
# Room for a path of PATH_MAX bytes after the header.
BREADCRUMB_BYTES: Final = 4096 + 64
_HEADER: Final = struct.Struct("<Iqq")  # path length (0: no session), size, mtime_ns


def file_stamp(path: str) -> tuple[int, int]:
    """(size, mtime_ns) of the file now; (-1, -1) when it cannot be stat'ed."""
    try:
        st = os.stat(path)
    except OSError:
        return (-1, -1)
    return (st.st_size, st.st_mtime_ns)


class Breadcrumb:
    """Which session a worker is working on, readable after the worker died."""

    def __init__(self, buffer: Any) -> None:
        self._buffer = buffer  # a RawArray("c", BREADCRUMB_BYTES), shared with one child

    def set(self, path: str) -> None:
        data = path.encode("utf-8", "surrogateescape")
        if len(data) > len(self._buffer) - _HEADER.size:
            self.clear()  # cannot be a real path; better no crumb than a wrong one
            return
        size, mtime_ns = file_stamp(path)
        view = memoryview(self._buffer).cast("B")
        view[_HEADER.size : _HEADER.size + len(data)] = data
        view[: _HEADER.size] = _HEADER.pack(len(data), size, mtime_ns)

    def clear(self) -> None:
        memoryview(self._buffer).cast("B")[: _HEADER.size] = _HEADER.pack(0, 0, 0)

    def read(self) -> tuple[str, int, int] | None:
        """(path, size, mtime_ns) of the session being worked on, or None."""
        view = memoryview(self._buffer).cast("B")
        length, size, mtime_ns = _HEADER.unpack(view[: _HEADER.size])
        if not length:
            return None
        path = bytes(view[_HEADER.size : _HEADER.size + length])
        return path.decode("utf-8", "surrogateescape"), size, mtime_ns


@dataclass(frozen=True, slots=True)
class Quarantined:
    """A session file that killed a worker every time, as it was then."""

    path: str
    size: int
    mtime_ns: int
    crashes: int
    how: str  # how the last worker died

    def holds(self, path: str) -> bool:
        """True while *path* is this file, unchanged."""
        return path == self.path and file_stamp(path) == (self.size, self.mtime_ns)

    def to_state(self) -> dict[str, Any]:
        """The run-state form (``restore`` reads it back)."""
        return {
            "path": self.path,
            "size": self.size,
            "mtimeNs": self.mtime_ns,
            "crashes": self.crashes,
            "cause": self.how,
        }


def restore(entries: object) -> list[Quarantined]:
    """The quarantined sessions of an earlier run state whose files are still unchanged;
    anything malformed is dropped (the file then simply gets another chance)."""
    out: list[Quarantined] = []
    for e in entries if isinstance(entries, list) else ():
        if not isinstance(e, dict):
            continue
        path, size, mtime_ns = e.get("path"), e.get("size"), e.get("mtimeNs")
        crashes, how = e.get("crashes"), e.get("cause")
        if not (
            isinstance(path, str)
            and isinstance(size, int)
            and isinstance(mtime_ns, int)
            and isinstance(crashes, int)
            and isinstance(how, str)
        ):
            continue
        held = Quarantined(path, size, mtime_ns, crashes, how)
        if held.crashes >= CRASHES_TO_QUARANTINE and held.holds(path):
            out.append(held)
    return out


class Quarantine:
    """The supervisor's count of worker deaths per session file."""

    def __init__(self, held: Iterable[Quarantined] = ()) -> None:
        self._deaths: dict[str, Quarantined] = {q.path: q for q in held}

    def crashed(self, crumb: tuple[str, int, int], how: str) -> Quarantined | None:
        """Count a worker's death on *crumb*; the entry when this death quarantines it."""
        path, size, mtime_ns = crumb
        before = self._deaths.get(path)
        same = before is not None and (before.size, before.mtime_ns) == (size, mtime_ns)
        crashes = before.crashes + 1 if same and before is not None else 1
        entry = Quarantined(path, size, mtime_ns, crashes, how)
        self._deaths[path] = entry
        return entry if crashes == CRASHES_TO_QUARANTINE else None

    def held(self) -> Mapping[str, Quarantined]:
        """Every quarantined session, by path."""
        return {p: q for p, q in self._deaths.items() if q.crashes >= CRASHES_TO_QUARANTINE}
