"""The write side of the store: records, generations, the writer lock, garbage collection.

::

    put(record) ──► records/ab/ab…ef.<kind>       content-addressed, written once, never changed
    publish(manifest N+1) ──► manifests/manifest-N+1 ──► CURRENT       (each atomic, in order)
    collect_garbage() ──► drop manifests and records no kept generation needs, after a grace

A reader pins CURRENT's generation; because records are immutable and collected only when no
kept generation names them and they are older than the grace period, a reader's view stays
complete while later generations are published. The query side never imports this module.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import stat
import time
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Final

from store.atomic import (
    FILE_MODE,
    DurableBatch,
    SyncThreads,
    atomic_write,
    ensure_dir,
    fsync_all,
    fsync_dir,
)
from store.codec import decode, encode, kind_of
from store.errors import (
    CorruptRecord,
    GenerationConflict,
    NotAnIndex,
    SchemaVersionError,
    StoreLocked,
)
from store.files import read_quietly
from store.layout import (
    IndexLayout,
    chunk_of,
    is_record_name,
    parse_manifest_name,
    record_name,
)
from store.lexicon import LEXICON_KIND
from store.reader import chunk, read_current
from store.records import (
    ColdDigest,
    HotShard,
    Manifest,
    SessionChunk,
    SessionEntries,
    SessionState,
    session_records,
)

__all__ = ["GcReport", "StoreWriter", "StoredRecord"]

StoredRecord = SessionEntries | HotShard | ColdDigest | SessionChunk

_TEMP_PREFIX: Final = "."
_LOCK_NAME: Final = "lock"
_SERVE_NAME: Final = "serve"


@dataclass(frozen=True, slots=True)
class GcReport:
    """What one ``collect_garbage`` pass kept and deleted."""

    kept_generations: tuple[int, ...]
    manifests_deleted: int
    manifest_bytes: int
    records_deleted: int
    record_bytes: int
    temps_deleted: int
    temp_bytes: int

    @property
    def bytes_freed(self) -> int:
        return self.manifest_bytes + self.record_bytes + self.temp_bytes


class StoreWriter:
    """Writes one index folder. Many may ``put``; publishing, GC and wipe take the lock."""

    def __init__(self, index_dir: Path) -> None:
        self.layout = IndexLayout(Path(index_dir))
        self.bytes_written = 0
        self._lock_fd: int | None = None
        self._lock_depth = 0
        self._dirs: set[Path] = set()
        # Records named by the generation this writer last saw published: GC keeps them, so
        # publish only needs to check that the names new to a manifest exist.
        self._published: tuple[int, frozenset[str]] = (0, frozenset())
        # Each chunk's rows and record name as this writer last published them: a chunk
        # whose rows are the very same keeps its name without being encoded again, so a
        # publish costs the chunks that changed, not every session's row.
        self._chunks: dict[int, tuple[tuple[SessionState, ...], str]] = {}
        self._chunk_of: dict[str, int] = {}
        self._staged: dict[int, tuple[tuple[SessionState, ...], str]] = {}  # stage_chunks
        self._batch: DurableBatch | None = None
        # chunk name -> the records its rows name (publish and GC; GC forgets unlisted ones)
        self._records_by_chunk: dict[str, frozenset[str]] = {}

    # -- records ---------------------------------------------------------------------------

    def put(self, record: StoredRecord) -> tuple[str, int]:
        """Store *record* under its content address; returns (name, file size).

        An existing file of that name already holds these bytes, so it is only touched: its
        fresh mtime keeps a grace-period GC from collecting a record about to be republished.
        """
        if not isinstance(record, SessionEntries | HotShard | ColdDigest | SessionChunk):
            raise TypeError(f"put() stores entries, shards, digests and chunks, not {type(record)}")
        return self._put_bytes(encode(record), kind_of(record))

    def _put_bytes(self, data: bytes, kind: str) -> tuple[str, int]:
        name = record_name(data, kind)
        path = self.layout.record_path(name)
        try:
            st = path.stat()
        except FileNotFoundError:
            pass
        else:
            if st.st_size == len(data):
                os.utime(path)
                return name, len(data)
        self._ensure_dir(path.parent)
        # The folder is fsynced by publish(), once for every record a manifest adds.
        if self._batch is not None:
            self._batch.write(path, data)
        else:
            atomic_write(path, data, sync_dir=False)
        self.bytes_written += len(data)
        return name, len(data)

    @contextlib.contextmanager
    def batch(self, threads: SyncThreads | None = None) -> Iterator[DurableBatch]:
        """Records put inside are made durable together and appear when the block ends
        (``DurableBatch``, which it gives: other files may join it, as the archive's do);
        when it raises, none of them does. Not reentrant. *threads*: what fsyncs them
        (``DurableBatch``)."""
        if self._batch is not None:
            raise RuntimeError("a batch is already open")
        self._batch = DurableBatch(threads)
        try:
            yield self._batch
            self._batch.commit()
        finally:
            self._batch.abandon()
            self._batch = None

    def put_lexicon(self, data: bytes) -> tuple[str, int]:
        """Store an encoded lexicon segment (``store.lexicon``); returns (name, file size)."""
        return self._put_bytes(data, LEXICON_KIND)

    # -- generations -----------------------------------------------------------------------

    def current_generation(self) -> int:
        """The published generation (0 when none)."""
        return read_current(self.layout.root) or 0

    def publish(self, manifest: Manifest) -> None:
        """Make *manifest* the current generation: manifest file first, then CURRENT.

        Raises GenerationConflict unless ``manifest.generation`` is current + 1 and every
        record it names exists.
        """
        with self.lock():
            current = self.current_generation()
            if manifest.generation != current + 1:
                raise GenerationConflict(
                    self.layout.root,
                    f"manifest generation {manifest.generation}, current is {current}",
                )
            manifest, chunks = self._chunked(manifest, current)
            # manifest.records(), a chunk at a time: an unchanged chunk's names are known
            names = set(manifest.chunks) | set(manifest.lexicon)
            for rows, name in chunks.values():
                names |= self._chunk_records(name, rows)
            added = self._check_records(current, names)
            # Records may come from other processes' put(): make their renames durable before
            # the manifest naming them can be.
            fsync_all(fsync_dir, sorted({self.layout.record_dir(n) for n in added}))
            if added:
                fsync_dir(self.layout.records)
            path = self.layout.manifest_path(manifest.generation)
            self._ensure_dir(path.parent)
            data = encode(replace(manifest, sessions=()))
            atomic_write(path, data)
            self.bytes_written += len(data)
            pointer = f"{path.name}\n".encode("ascii")
            atomic_write(self.layout.current, pointer)
            self.bytes_written += len(pointer)
            self._published = (manifest.generation, frozenset(names))
            self._chunks = chunks

    def _check_records(self, current: int, names: set[str]) -> set[str]:
        """The names new since generation *current*; raises if one of them is missing."""
        generation, known = self._published
        if generation != current:
            try:
                known = self._records_of(current) if current else frozenset()
            except SchemaVersionError:
                # another format's generation (an upgrade replaces it): none of its records
                # is known to hold anything this one names, so every name is checked
                known = frozenset()
        added = names - known
        missing = sorted(
            n for n in added if not (is_record_name(n) and self.layout.record_path(n).is_file())
        )
        if missing:
            shown = ", ".join(missing[:3]) + (" …" if len(missing) > 3 else "")
            raise GenerationConflict(
                self.layout.root, f"{len(missing)} named record(s) missing: {shown}"
            )
        return added

    def _chunked(
        self, manifest: Manifest, current: int
    ) -> tuple[Manifest, dict[int, tuple[tuple[SessionState, ...], str]]]:
        """*manifest* with its sessions also stored as chunk records, named in ``chunks``.

        A session's chunk is fixed by its path, so a change to one session rewrites one chunk
        (about 1/CHUNKS of the rows) while every other chunk keeps its name and file. Also
        returns the chunks to remember once the manifest is published.
        """
        if self._published[0] != current:
            # Someone else published since: the remembered chunks may be gone.
            self._chunks.clear()
        where = self._chunk_of
        groups: dict[int, list[SessionState]] = {}
        for state in manifest.sessions:
            k = where.get(state.path)
            if k is None:
                k = where[state.path] = chunk_of(state.path)
            groups.setdefault(k, []).append(state)
        names: list[str] = []
        chunks: dict[int, tuple[tuple[SessionState, ...], str]] = {}
        for k in sorted(groups):
            rows = tuple(sorted(groups[k], key=_path_of))
            name = self._chunk_name(k, rows)
            chunks[k] = (rows, name)
            names.append(name)
        self._staged.clear()
        return replace(manifest, chunks=tuple(names)), chunks

    def _chunk_name(self, k: int, rows: tuple[SessionState, ...]) -> str:
        """The record name of chunk *k* holding *rows*, written now unless this writer
        published or staged those very rows under that name already."""
        for kept in (self._chunks.get(k), self._staged.get(k)):
            # Tuples compare element by element, identity first: the same rows cost a pass in
            # C. The file is checked too: the index may have been wiped and rebuilt meanwhile.
            if kept is not None and kept[0] == rows and self.layout.record_path(kept[1]).is_file():
                return kept[1]
        return self.put(SessionChunk(rows))[0]

    def stage_chunks(self, sessions: Iterable[SessionState]) -> None:
        """Write the chunk records a manifest of *sessions* will name, ahead of ``publish``
        (which then finds them by their rows): a run can do this while its lexicon buckets
        are still being built elsewhere."""
        where = self._chunk_of
        groups: dict[int, list[SessionState]] = {}
        for state in sessions:
            k = where.get(state.path)
            if k is None:
                k = where[state.path] = chunk_of(state.path)
            groups.setdefault(k, []).append(state)
        with self.lock():
            for k, group in groups.items():
                rows = tuple(sorted(group, key=_path_of))
                self._staged[k] = (rows, self._chunk_name(k, rows))

    def prime(self) -> None:
        """Learn the current generation's chunks and records as a publish of this writer's
        would have left them, ahead of the next publish (a publisher's idle time): the first
        publish of a fresh writer otherwise read every chunk and encoded every session's row
        again to name its chunks (O(sessions): ~10 ms at S, ~10x at M), and the first append
        after a start waited on it. The rows are the reader's own decoded chunks
        (``store.reader.chunk``), the very objects a publisher that booted from the snapshot
        holds, so ``_chunk_name`` keeps an unchanged chunk's name by identity."""
        with self.lock():
            current = self.current_generation()
            if not current or self._published[0] == current:
                return
            path = self.layout.manifest_path(current)
            try:
                manifest = decode(read_quietly(path), expect=Manifest, path=str(path))
                chunks = {name: chunk(self.layout, name).sessions for name in manifest.chunks}
            except (FileNotFoundError, SchemaVersionError):
                return  # collected meanwhile, or another format's: the publish finds out
            learned: dict[int, tuple[tuple[SessionState, ...], str]] = {}
            for name, rows in chunks.items():
                self._chunk_records(name, rows)  # remembered: _records_of reads no chunk
                if rows:
                    learned[chunk_of(rows[0].path)] = (rows, name)
            self._chunks = learned
            self._published = (current, self._records_of(current))

    def _records_of(self, generation: int) -> frozenset[str]:
        path = self.layout.manifest_path(generation)
        manifest = decode(read_quietly(path), expect=Manifest, path=str(path))
        names = set(manifest.records())
        for name in manifest.chunks:
            names |= self._chunk_records(name)
        return frozenset(names)

    def _chunk_records(
        self, name: str, rows: tuple[SessionState, ...] | None = None
    ) -> frozenset[str]:
        """The record names the rows of chunk *name* (*rows* when at hand) reference. A
        chunk is immutable and most of them are shared by every generation (an append
        rewrites one), so each is read once per writer, not at every publish or collection
        that lists it."""
        found = self._records_by_chunk.get(name)
        if found is None:
            if rows is None:
                path = self.layout.record_path(name)
                rows = decode(read_quietly(path), expect=SessionChunk, path=str(path)).sessions
            found = self._records_by_chunk[name] = frozenset(session_records(rows))
        return found

    # -- the lock --------------------------------------------------------------------------

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """Hold the index's writer lock (re-entrant within this writer).

        flock belongs to the open file description, so a second writer (in this process or
        another) gets StoreLocked at once instead of waiting.
        """
        if self._lock_fd is not None:
            self._lock_depth += 1
            try:
                yield
            finally:
                self._lock_depth -= 1
            return
        self._ensure_dir(self.layout.root)
        fd = os.open(self.layout.lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
        try:
            # O_CREAT's mode went through the umask; an unneeded chmod would still dirty the
            # inode on every run, a no-op included.
            if stat.S_IMODE(os.fstat(fd).st_mode) != FILE_MODE:
                os.fchmod(fd, FILE_MODE)
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise StoreLocked(self.layout.root) from None
        except BaseException:
            os.close(fd)
            raise
        self._lock_fd = fd
        try:
            yield
        finally:
            self._lock_fd = None
            os.close(fd)  # closing the last descriptor releases the flock

    # -- garbage collection ----------------------------------------------------------------

    def collect_garbage(
        self,
        *,
        keep_generations: int = 3,
        grace_seconds: float = 600,
        now: float | None = None,
    ) -> GcReport:
        """Delete what no kept generation needs, once it is older than the grace period.

        Kept: CURRENT's generation and the ``keep_generations - 1`` before it, any manifest
        younger than the grace period, every record one of those manifests names, and any
        record or temp file younger than the grace period (a writer may be about to publish
        it). A manifest newer than CURRENT is a publish that crashed before CURRENT moved.
        """
        if keep_generations < 1:
            raise ValueError("keep_generations must be at least 1")
        now = time.time() if now is None else now
        cutoff = now - grace_seconds
        deleted = _Tally()
        with self.lock():
            current = self.current_generation()
            manifests = self._scan_manifests(cutoff, deleted)
            kept = sorted(g for g in manifests if g <= current)[-keep_generations:]
            if current and current not in kept:
                raise CorruptRecord(self.layout.current, "CURRENT names a missing manifest")
            survivors: list[int] = []
            for generation, (path, st) in sorted(manifests.items()):
                if generation in kept or st.st_mtime > cutoff:
                    survivors.append(generation)
                elif _unlink(path):
                    deleted.manifests += 1
                    deleted.manifest_bytes += st.st_size
            referenced: set[str] = set()
            for generation in survivors:
                try:
                    referenced |= self._records_of(generation)
                except (CorruptRecord, SchemaVersionError, FileNotFoundError):
                    if generation == current:
                        raise  # without its names nothing can be collected safely
                    # A damaged older manifest cannot be opened by any reader either, nor
                    # one another format wrote (the generations before an upgrade).
            self._collect_records(referenced, cutoff, deleted)
            # what no kept generation lists any more is not asked for again
            self._records_by_chunk = {
                n: r for n, r in self._records_by_chunk.items() if n in referenced
            }
            if deleted.manifests:
                fsync_dir(self.layout.manifests)
        return GcReport(
            kept_generations=tuple(kept),
            manifests_deleted=deleted.manifests,
            manifest_bytes=deleted.manifest_bytes,
            records_deleted=deleted.records,
            record_bytes=deleted.record_bytes,
            temps_deleted=deleted.temps,
            temp_bytes=deleted.temp_bytes,
        )

    def _scan_manifests(
        self, cutoff: float, deleted: _Tally
    ) -> dict[int, tuple[Path, os.stat_result]]:
        found: dict[int, tuple[Path, os.stat_result]] = {}
        for path, st in _files(self.layout.manifests):
            if path.name.startswith(_TEMP_PREFIX):
                deleted.temp(path, st, cutoff)
                continue
            generation = parse_manifest_name(path.name)
            if generation is not None:
                found[generation] = (path, st)
        return found

    def _collect_records(self, referenced: set[str], cutoff: float, deleted: _Tally) -> None:
        for fan_out in _subdirs(self.layout.records):
            removed = False
            # A record a kept generation names is passed over by its name alone: every run
            # (a no-op too) collects, and a stat per record made that O(history).
            for path, st in _files(fan_out, skip=referenced):
                if path.name.startswith(_TEMP_PREFIX):
                    removed |= deleted.temp(path, st, cutoff)
                elif is_record_name(path.name) and st.st_mtime <= cutoff and _unlink(path):
                    deleted.records += 1
                    deleted.record_bytes += st.st_size
                    removed = True
            if removed:
                fsync_dir(fan_out)

    # -- rebuild ---------------------------------------------------------------------------

    def wipe(self) -> None:
        """Delete every derived file of the index (for `pipeline rebuild`), nothing else (the
        archive, store.archive, lives beside the index folder and is not touched).

        Raises NotAnIndex when the folder holds files but none of the index's own.
        """
        root = self.layout.root
        try:
            present = {p.name for p in root.iterdir()}
        except FileNotFoundError:
            return
        own = {p.name for p in self.layout.derived()}
        # The query server's socket folder may exist before anything was ever indexed.
        if present - {_LOCK_NAME, _SERVE_NAME} and not present & own:
            raise NotAnIndex(root)
        with self.lock():
            for path in self.layout.derived():
                if path.is_symlink() or path.is_file():
                    path.unlink()
                elif path.is_dir():
                    shutil.rmtree(path)
            fsync_dir(root)
            self._dirs.clear()
            self._published = (0, frozenset())
            self._chunks.clear()

    # -- helpers ---------------------------------------------------------------------------

    def _ensure_dir(self, path: Path) -> None:
        if path not in self._dirs:
            ensure_dir(path)
            self._dirs.add(path)


class _Tally:
    """Counts of one GC pass (mutable while it runs, frozen into GcReport after)."""

    def __init__(self) -> None:
        self.manifests = self.manifest_bytes = 0
        self.records = self.record_bytes = 0
        self.temps = self.temp_bytes = 0

    def temp(self, path: Path, st: os.stat_result, cutoff: float) -> bool:
        """Delete a temp file a crashed writer left behind; a young one may still be written."""
        if st.st_mtime > cutoff or not _unlink(path):
            return False
        self.temps += 1
        self.temp_bytes += st.st_size
        return True


def _files(
    folder: Path, *, skip: Collection[str] = frozenset()
) -> list[tuple[Path, os.stat_result]]:
    """The files of *folder* and their stats, but those named in *skip* (never stat'ed)."""
    try:
        entries = list(os.scandir(folder))
    except FileNotFoundError:
        return []
    found: list[tuple[Path, os.stat_result]] = []
    for entry in entries:
        if entry.name in skip:
            continue
        with _vanished():
            if entry.is_file(follow_symlinks=False):
                found.append((Path(entry.path), entry.stat(follow_symlinks=False)))
    return found


def _subdirs(folder: Path) -> list[Path]:
    try:
        return [Path(e.path) for e in os.scandir(folder) if e.is_dir(follow_symlinks=False)]
    except FileNotFoundError:
        return []


@contextlib.contextmanager
def _vanished() -> Iterator[None]:
    """Best effort for GC only: a file someone else removed first is already collected."""
    with contextlib.suppress(FileNotFoundError):
        yield


def _unlink(path: Path) -> bool:
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    return True


def _path_of(state: SessionState) -> str:
    return state.path
