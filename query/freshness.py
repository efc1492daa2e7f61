"""Is the indexed session still the file on disk?

The indexer records the stamp ``(dev, inode, size, mtime_ns, ctime_ns)`` of the descriptor it
read. An equal stamp proves the bytes are unchanged (an in-place rewrite always moves ctime).
A moved stamp with the same size may still be the same bytes (a ``touch``, a ``chmod``), so
then — and only then — the file is hashed and compared with ``source_hash``; a different
size is a change without reading anything. Hash verdicts are remembered per stamp, so a
long-running process hashes a touched file once.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Final, Literal

import blake3

from store.records import SessionState

__all__ = ["Freshness", "Observation", "Status"]

Status = Literal["fresh", "changed", "missing", "unreadable"]
_CACHE_MAX: Final = 4096
_CHUNK: Final = 1 << 20


@dataclass(frozen=True, slots=True)
class Observation:
    status: Status
    # blake3 of the live file, when it had to be (or was asked to be) computed
    actual_hash: str | None = None

    @property
    def fresh(self) -> bool:
        return self.status == "fresh"


def _hash_file(path: str) -> str:
    h = blake3.blake3()
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    try:
        while True:
            chunk = os.read(fd, _CHUNK)
            if not chunk:
                break
            h.update(chunk)
    finally:
        os.close(fd)
    return h.hexdigest()


class Freshness:
    """Observes session files for one process; safe to share across requests."""

    def __init__(self) -> None:
        self._verdicts: dict[tuple[str, int, int, int, int, int], str] = {}

    def observe(self, state: SessionState, *, need_hash: bool = False) -> Observation:
        """Compare the live file with *state*; ``need_hash`` also reports a changed file's hash."""
        try:
            st = os.stat(state.path, follow_symlinks=False)
        except FileNotFoundError:
            return Observation("missing")
        except OSError:
            return Observation("unreadable")
        stamp = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        if stamp == state.stamp:
            return Observation("fresh", state.source_hash)
        if st.st_size != state.size and not need_hash:
            return Observation("changed")
        key = (state.path, *stamp)
        actual = self._verdicts.get(key)
        if actual is None:
            try:
                actual = _hash_file(state.path)
            except OSError:
                return Observation("unreadable")
            if len(self._verdicts) >= _CACHE_MAX:
                self._verdicts.clear()
            self._verdicts[key] = actual
        if actual == state.source_hash:
            return Observation("fresh", actual)
        return Observation("changed", actual)
