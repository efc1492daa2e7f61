"""The read API: pin one published generation and load its records. Never writes.

::

    CURRENT ──► manifests/manifest-N ──► Snapshot(N) ──load(name)──► records/ab/ab…ef.shard

A ``Snapshot`` is a consistent view: the writer never changes a published file, and garbage
collection keeps the newest generations and anything younger than its grace period, so a
reader holding generation N keeps loading N's records while N+1 is published. The query side
imports only this module (plus records, tokens, codec, errors and layout).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Final

from store.codec import T, decode
from store.errors import CorruptRecord, SnapshotMissing
from store.files import read_quietly
from store.integrity import FIRST_LOADS, matches
from store.layout import IndexLayout, parse_manifest_name
from store.records import Manifest, SessionChunk, SessionState

__all__ = ["Snapshot", "open_snapshot", "read_current"]

# CURRENT can move between reading it and opening its manifest; a few retries cover a
# writer that publishes in a tight loop.
_OPEN_ATTEMPTS: Final = 5


def read_current(index_dir: Path) -> int | None:
    """The generation CURRENT points at, or None when nothing has been published."""
    layout = IndexLayout(Path(index_dir))
    try:
        text = read_quietly(layout.current)
    except FileNotFoundError:
        return None
    try:
        name = text.decode("ascii")
    except UnicodeDecodeError:
        name = ""
    generation = parse_manifest_name(name.removesuffix("\n"))
    if generation is None or not name.endswith("\n"):
        raise CorruptRecord(layout.current, f"CURRENT does not name a manifest: {text[:80]!r}")
    return generation


def open_snapshot(index_dir: Path) -> Snapshot:
    """Pin the generation CURRENT points at.

    Raises SnapshotMissing when nothing has been published yet.
    """
    layout = IndexLayout(Path(index_dir))
    last: OSError | None = None
    for _ in range(_OPEN_ATTEMPTS):
        generation = read_current(layout.root)
        if generation is None:
            raise SnapshotMissing(layout.root)
        path = layout.manifest_path(generation)
        try:
            data = read_quietly(path)
        except FileNotFoundError as exc:  # collected between CURRENT and here: look again
            last = exc
            continue
        manifest = decode(data, expect=Manifest, path=str(path))
        if manifest.generation != generation:
            raise CorruptRecord(
                path, f"manifest holds generation {manifest.generation}, its name {generation}"
            )
        if manifest.chunks:
            try:
                manifest = _with_sessions(layout, manifest)
            except FileNotFoundError as exc:  # collected after CURRENT moved on: look again
                last = exc
                continue
        return Snapshot(generation, manifest, layout)
    raise CorruptRecord(layout.current, f"CURRENT names a missing manifest ({last})")


# Decoded chunks by name. Chunks are immutable and an append changes one of them, so a
# reader that reopens after every publish decodes one chunk instead of every session row.
_CHUNKS: OrderedDict[str, SessionChunk] = OrderedDict()
_CHUNK_CACHE = 1024


# The last decoded row of each path: a changed chunk's rows that did not change come back
# as the very objects readers already hold, so identity keeps meaning "unchanged" for every
# row but the ones a publish really changed (readers carry their work across generations by
# identity first).
_ROWS: dict[str, SessionState] = {}
_ROWS_MAX = 1 << 20


def chunk(layout: IndexLayout, name: str) -> SessionChunk:
    """Chunk record *name*, decoded once per process (its rows as the readers hold them)."""
    found = _CHUNKS.get(name)
    if found is not None:
        _CHUNKS.move_to_end(name)
        return found
    path = layout.record_path(name)
    found = decode(read_quietly(path), expect=SessionChunk, path=str(path))
    if len(_ROWS) > _ROWS_MAX:
        _ROWS.clear()
    found = replace(found, sessions=tuple(map(_known_row, found.sessions)))
    _CHUNKS[name] = found
    while len(_CHUNKS) > _CHUNK_CACHE:
        _CHUNKS.popitem(last=False)
    return found


def _known_row(state: SessionState) -> SessionState:
    known = _ROWS.get(state.path)
    if known is not None and known == state:
        return known
    _ROWS[state.path] = state
    return state


def _with_sessions(layout: IndexLayout, manifest: Manifest) -> Manifest:
    """The manifest with the sessions of its chunks, sorted by path."""
    sessions = [s for name in manifest.chunks for s in chunk(layout, name).sessions]
    sessions.sort(key=lambda s: s.path)
    return replace(manifest, sessions=tuple(sessions))


@dataclass(frozen=True, slots=True)
class Snapshot:
    """One published generation, read-only."""

    generation: int
    manifest: Manifest
    layout: IndexLayout
    _sessions: dict[str, SessionState] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_sessions", {s.path: s for s in self.manifest.sessions})

    def session(self, path: str) -> SessionState | None:
        return self._sessions.get(path)

    def up_to_date(self) -> bool:
        """False once CURRENT has moved on (check between requests, then reopen)."""
        return read_current(self.layout.root) == self.generation

    def load(self, name: str, expect: type[T], *, verify: bool = False) -> T:
        """Decode the record *name* of this generation; a record that is gone or damaged
        raises CorruptRecord.

        Its bytes are checked against the content hash in its name on the first load of it
        in this process (``store.integrity``), and on every load with ``verify``.
        """
        try:
            path = self.layout.record_path(name)
        except ValueError as exc:
            raise CorruptRecord(self.layout.records / "?", str(exc)) from exc
        try:
            data = read_quietly(path)
        except FileNotFoundError as exc:
            raise CorruptRecord(
                path,
                f"record of generation {self.generation} is missing "
                "(collected, or the index was wiped)",
            ) from exc
        if not (matches(name, data) if verify else FIRST_LOADS.check(path, name, data)):
            raise CorruptRecord(path, "content does not match its hash")
        return decode(data, expect=expect, path=str(path))
