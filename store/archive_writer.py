"""The write side of the archive (``store.archive``): keep, extend, retire, remove, forget.

::

    keep_whole(key, bytes of the whole file)        after a whole build
        chain is a prefix of the bytes ─► one segment for the new tail (if any), new HEAD
        otherwise ────────────────────► a new chain; the old segments are deleted after it
    keep_append(key, new bytes, old length + hash)   the append path: one segment, new HEAD
        the last FANOUT segments share a level ─► folded into one segment of the next level
    past ``max_bytes`` nothing more is written: the chain is marked ``truncated`` and the
    caller records ``NOT_KEPT`` on the session (coverage reason ``archive_full`` if the source
    is later deleted)

Only the pipeline writes, and one process owns a session at a time (the worker it hashes to,
or the catch-up run holding the writer lock), so a chain has one writer; segments are written
before the HEAD that names them, so a crash leaves the old chain or the new one, plus at most
some unreferenced files that ``collect`` removes. The query side never imports this module.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Final

import blake3
import structlog
import zstandard

from store.archive import (
    ARCHIVED,
    FANOUT,
    HEAD,
    KEPT,
    LOCK,
    NOT_KEPT,
    SEGMENT_SUFFIX,
    TOMBSTONES,
    Archive,
    Chain,
    Segment,
    encode_tombstones,
    key_name,
    path_hash,
)
from store.atomic import FILE_MODE, DurableBatch, atomic_write, ensure_dir, fsync_all, fsync_dir
from store.errors import CorruptRecord

__all__ = ["ARCHIVED", "KEPT", "NOT_KEPT", "ArchiveWriter"]

log = structlog.get_logger()

# zstd level 1: session JSONL compresses ~5-9x (level 3: ~10 % smaller) at ~40 % less CPU
# than level 3, which was ~4 % of a whole build's CPU (ops/bench: archive, --base).
_LEVEL: Final = 1
# A chain written whole is one segment no append folds into.
_WHOLE_LEVEL: Final = 1 << 16
# How long a usage total is trusted before the folder is measured again (other processes
# write too: the cap may be passed by what they wrote meanwhile, a few segments at most).
_USAGE_TTL_S: Final = 30.0
# Files a crash left behind are collected only once this old (a writer may be mid-way).
_ORPHAN_AGE_S: Final = 3600.0


class _Compressors(threading.local):
    def __init__(self) -> None:
        self.zstd = zstandard.ZstdCompressor(level=_LEVEL)


_COMPRESSORS = _Compressors()


class ArchiveWriter:
    """Writes one archive folder (see the module docstring)."""

    def __init__(
        self,
        root: Path,
        *,
        max_bytes: int,
        clock: Callable[[], float] = time.monotonic,
        now_ns: Callable[[], int] = time.time_ns,
    ) -> None:
        self.reader = Archive(root)
        self.root = self.reader.root
        self.max_bytes = max_bytes
        self.clock = clock
        self.now_ns = now_ns
        self.bytes_written = 0
        self._usage: int | None = None
        self._usage_at = 0.0
        self._ready = False  # the chains folder exists
        self._batch: _Batch | None = None

    @contextlib.contextmanager
    def batch(self, files: DurableBatch | None = None) -> Iterator[None]:
        """Chains kept inside are made durable together when the block ends: every segment
        and HEAD fsynced (concurrently, in one round), then renamed in the order they were
        written (a chain's segments before the HEAD naming them), the folders synced, then
        the segments they replaced deleted; a crash leaves each chain as it was or as it
        became. When the block raises, nothing new appears. Not reentrant.

        *files*: an open batch of other files (a ``StoreWriter.batch``'s records) the
        archive's join, so one round of fsyncs makes both durable; it is committed (and on
        an error abandoned) here, with everything written to it so far."""
        if self._batch is not None:
            raise RuntimeError("an archive batch is already open")
        batch = self._batch = _Batch(files)
        try:
            yield
            # Every file's bytes are durable before any rename; every segment is renamed
            # before any HEAD naming it, in the same folder, and one fsync of the folder after
            # both makes them durable together: a journaling file system commits a folder's
            # renames in the order they were made.
            batch.files.commit()
            _sync_dirs(batch.folders)
            for name, names in batch.drops:
                self._drop_segments(name, names)
        finally:
            batch.files.abandon()
            self._batch = None

    # -- keeping ----------------------------------------------------------------------------

    def keep_whole(
        self,
        key: str,
        agent: str,
        data: bytes,
        stamp: tuple[int, int, int, int, int],
        meta: dict[str, Any] | None,
        *,
        full_hash: str,
        prefix_hash: Callable[[int], str],
        retired: tuple[str, ...] | None = None,
    ) -> str:
        """Keep *data*, the whole file indexed as *key* (hashing to *full_hash*); returns
        ``KEPT`` or ``NOT_KEPT``. *prefix_hash(n)* is the blake3 of ``data[:n]``; *retired*
        (None: as it was) the keys of its old versions kept apart."""
        chain = self._head(key)
        if retired is None:
            retired = chain.retired if chain is not None else ()
        if (
            chain is not None
            and chain.length <= len(data)
            and (chain.length == 0 or prefix_hash(chain.length) == chain.hash)
        ):
            tail = memoryview(data)[chain.length :]
            if not tail:
                want = replace(chain, stamp=stamp, meta=meta, truncated=False, retired=retired)
                if want != chain:
                    self._write_head(want)
                return KEPT
            chain = replace(chain, retired=retired)  # written with the new segment
            return self._extend(chain, bytes(tail), len(data), full_hash, stamp, meta)
        # Nothing, or something the file no longer begins with: a new chain.
        fresh = Chain(
            key, key, agent, 0, blake3.blake3().hexdigest(), stamp, (), meta, retired=retired
        )
        frame = self._frame(data)
        if not self._room(len(frame)):
            if chain is not None:
                self.remove(key)  # a copy of bytes the file no longer holds
            return NOT_KEPT
        segment = Segment(full_hash, len(data), _WHOLE_LEVEL)  # the blake3 of all of data
        # one file: the HEAD carries the segment inline (see store.archive)
        self._write_head(
            replace(fresh, length=len(data), hash=full_hash, segments=(segment,)), frame
        )
        if chain is not None:
            self._drop_after(key_name(key), {s.name for s in chain.segments} - {segment.name})
        return KEPT

    def keep_append(
        self,
        key: str,
        new: bytes,
        *,
        old_length: int,
        old_hash: str,
        full_hash: str,
        stamp: tuple[int, int, int, int, int],
    ) -> str | None:
        """Keep *new*, the bytes appended after ``[0, old_length)`` hashing to *old_hash*;
        None when the chain is not exactly that (the caller keeps the whole file instead)."""
        chain = self._head(key)
        if chain is None or chain.length != old_length or chain.hash != old_hash:
            return None
        if not new:
            if chain.stamp != stamp:
                self._write_head(replace(chain, stamp=stamp))
            return KEPT
        return self._extend(chain, new, old_length + len(new), full_hash, stamp, chain.meta)

    def restamp(self, key: str, stamp: tuple[int, int, int, int, int]) -> None:
        """The source's stamp moved without new bytes (a touch): the chain remembers it, so a
        session rebuilt from the archive has the stamp it had."""
        chain = self._head(key)
        if chain is not None and chain.stamp != stamp:
            self._write_head(replace(chain, stamp=stamp))

    def _extend(
        self,
        chain: Chain,
        new: bytes,
        length: int,
        full_hash: str,
        stamp: tuple[int, int, int, int, int],
        meta: dict[str, Any] | None,
    ) -> str:
        frame = self._frame(new)
        if not self._room(len(frame)):
            if not chain.truncated:
                self._write_head(replace(chain, truncated=True))
            return NOT_KEPT
        name = key_name(chain.key)
        segment = Segment(blake3.blake3(new).hexdigest(), len(new), 0)
        self._put_segment(name, segment, frame, new)
        segments = [*chain.segments, segment]
        dropped: set[str] = set()
        # Fold the newest FANOUT segments while they share a level: a chain keeps at most
        # FANOUT - 1 per level, and every byte is rewritten once per level it climbs.
        while len(segments) >= FANOUT and len({s.level for s in segments[-FANOUT:]}) == 1:
            run = segments[-FANOUT:]
            if run[0].level >= _WHOLE_LEVEL:
                break
            merged = b"".join(self._segment_bytes(name, s) for s in run)
            folded = Segment(blake3.blake3(merged).hexdigest(), len(merged), run[0].level + 1)
            self._put_segment(name, folded, self._frame(merged), merged)
            dropped.update(s.name for s in run)
            segments[-FANOUT:] = [folded]
        self._sync()
        self._write_head(
            replace(
                chain,
                length=length,
                hash=full_hash,
                stamp=stamp,
                meta=meta,
                segments=tuple(segments),
                truncated=False,
            )
        )
        self._drop_after(name, dropped - {s.name for s in segments})
        return KEPT

    # -- retiring and removing ----------------------------------------------------------------

    def retire(self, key: str, new_key: str) -> Chain | None:
        """Keep *key*'s chain as *new_key* (the old version of a rewritten session): its
        segments are linked into the new folder, whose HEAD is written last."""
        chain = self._head(key)
        if chain is None:
            return None
        self._link_segments(chain, key_name(key), key_name(new_key))
        moved = replace(chain, key=new_key, updated_ns=self.now_ns())
        data = moved.encode()
        atomic_write(self.reader.head_path(new_key), data)
        self.bytes_written += len(data)
        return moved

    def remove(self, key: str) -> bool:
        """Delete *key*'s chain, HEAD first so no reader sees half of it; True if it was.
        (A HEAD that cannot be decoded names no segments: ``collect`` removes them.)"""
        name = key_name(key)
        head = self.reader.head_file(name)
        try:
            found = self.reader.entry(name)
        except CorruptRecord:
            found = None
        removed = self._remove_legacy(name)
        try:
            os.unlink(head)
        except FileNotFoundError:
            return removed
        fsync_dir(head.parent)
        if found is not None and not found.legacy:
            self._drop_segments(name, {s.name for s in found.chain.segments})
        self._usage = None
        return True

    def _remove_legacy(self, name: str) -> bool:
        """Delete the folder an older build kept the chain *name* in (renamed away first, so
        no reader sees half of it)."""
        folder = self.reader.folder_of(name)
        if not folder.is_dir():
            return False
        trash = folder.with_name(f".trash-{folder.name}-{self.now_ns()}")
        os.rename(folder, trash)
        fsync_dir(folder.parent)
        shutil.rmtree(trash, ignore_errors=True)
        self._usage = None
        return True

    # -- forgetting ---------------------------------------------------------------------------

    def forget(self, paths: Iterable[str]) -> int:
        """Add *paths* to the tombstones (their hashes only); returns how many were new."""
        ensure_dir(self.root)
        fd = os.open(self.root / LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # tombstone writers are brief: wait for another
            before = self.reader.tombstones()
            after = before | {path_hash(p) for p in paths}
            if after != before:
                atomic_write(self.root / TOMBSTONES, encode_tombstones(after))
            return len(after) - len(before)
        finally:
            os.close(fd)

    # -- clean-up -----------------------------------------------------------------------------

    def collect(self, *, now: float | None = None, age_s: float = _ORPHAN_AGE_S) -> int:
        """Remove what a crash left behind: temp files, segments no HEAD names, an older
        build's trash and folders, once older than *age_s*. Returns files removed."""
        cutoff = (time.time() if now is None else now) - age_s
        removed = 0
        named: dict[str, set[str] | None] = {}  # chain name -> its segment names (None: damaged)

        def segments_of(name: str) -> set[str] | None:
            if name not in named:
                try:
                    found = self.reader.entry(name)
                except CorruptRecord:
                    named[name] = None  # damaged: kept for a person to look at (doctor)
                else:
                    chain = found.chain if found is not None and not found.legacy else None
                    named[name] = {s.name for s in chain.segments} if chain else set()
            return named[name]

        try:
            entries = list(os.scandir(self.reader.chains_dir))
        except FileNotFoundError:
            entries = []
        for entry in entries:
            if _is_head_name(entry.name):
                continue
            if not entry.name.startswith("."):
                name, _, rest = entry.name.partition(".")
                kept = segments_of(name)
                if kept is None or rest.removesuffix(SEGMENT_SUFFIX) in kept:
                    continue
            with contextlib.suppress(FileNotFoundError):
                if entry.stat(follow_symlinks=False).st_mtime <= cutoff:
                    os.unlink(entry.path)
                    removed += 1
        removed += self._collect_legacy(cutoff)
        self._usage = None
        return removed

    def _collect_legacy(self, cutoff: float) -> int:
        removed = 0
        for fan in _subdirs(self.reader.sessions):
            for folder in _subdirs(fan):
                try:
                    if folder.name.startswith(".trash-"):
                        shutil.rmtree(folder, ignore_errors=True)
                        removed += 1
                        continue
                    found = self.reader.entry(folder.name)
                except CorruptRecord:
                    continue  # damaged: kept for a person to look at (doctor names it)
                chain = found.chain if found is not None and found.legacy else None
                named = {f"{s.name}{SEGMENT_SUFFIX}" for s in chain.segments} if chain else set()
                for entry in os.scandir(folder):
                    if entry.name == HEAD and chain is not None or entry.name in named:
                        continue
                    with contextlib.suppress(FileNotFoundError):
                        if entry.stat(follow_symlinks=False).st_mtime <= cutoff:
                            os.unlink(entry.path)
                            removed += 1
                if chain is None:
                    with contextlib.suppress(OSError):
                        os.rmdir(folder)  # only when empty
        return removed

    def measure_ahead(self) -> None:
        """Measure the archive now when nothing is measured (at start, after a removal), in
        a worker's idle time, so that the next append does not: ``usage`` walks the whole
        archive (~5 ms at S, ~10x at M), and the first append after a start paid it."""
        if self._usage is None:
            self.usage()

    def usage(self) -> int:
        """Bytes under the archive folder (measured again after ``_USAGE_TTL_S``)."""
        now = self.clock()
        if self._usage is None or now - self._usage_at > _USAGE_TTL_S:
            self._usage = self.reader.usage()
            self._usage_at = now
        return self._usage

    # -- helpers ------------------------------------------------------------------------------

    def _head(self, key: str) -> Chain | None:
        """*key*'s chain, moved out of an older build's layout first when it is there."""
        try:
            found = self.reader.entry(key_name(key))
        except CorruptRecord as exc:
            log.warning("archive.damaged", key=key, error=str(exc))
            return None  # a new chain replaces it
        if found is None or found.chain.key != key:
            return None
        if found.legacy:
            self._adopt(found.chain, key_name(key))
        return found.chain

    def _adopt(self, chain: Chain, name: str) -> None:
        """Move a chain an older build kept in a folder of its own into ``chains/``: its
        segments linked (O(1) each), then its HEAD written, then the old folder removed; a
        crash leaves it where it was, or moved (the folder is then ``collect``'s)."""
        self._link_segments(chain, name, name)
        atomic_write(self.reader.head_file(name), chain.encode())
        self._remove_legacy(name)
        log.info("archive.moved", key=chain.key)

    def _link_segments(self, chain: Chain, name: str, new: str) -> None:
        """Link the segment files of the chain *name* as those of the chain *new* (a segment
        its HEAD carries inline: the HEAD, whose frame ``store.archive.frame_of`` finds), then
        make the links durable."""
        self._ensure()
        found = self.reader.entry(name)
        inline = found.chain.segments[0].name if found is not None and found.inline else None
        old = self.reader.folder_of(name) if found is not None and found.legacy else None
        for segment in chain.segments:
            if segment.name == inline:
                source = old / HEAD if old is not None else self.reader.head_file(name)
            elif old is not None:
                source = old / f"{segment.name}{SEGMENT_SUFFIX}"
            else:
                source = self.reader.segment_file(name, segment.name)
            with contextlib.suppress(FileExistsError):
                os.link(source, self.reader.segment_file(new, segment.name))
        fsync_dir(self.reader.chains_dir)

    def _inline(self, name: str) -> str | None:
        """The name of the segment the HEAD of chain *name* carries inline, if it does."""
        try:
            found = self.reader.entry(name)
        except CorruptRecord:
            return None
        if found is None or not found.inline or found.legacy:
            return None
        return found.chain.segments[0].name

    def _room(self, n: int) -> bool:
        return self.usage() + n <= self.max_bytes

    def _ensure(self) -> Path:
        folder = self.reader.chains_dir
        if not self._ready:
            ensure_dir(folder)
            self._ready = True
        return folder

    def _frame(self, data: bytes) -> bytes:
        frame: bytes = _COMPRESSORS.zstd.compress(data)
        return frame

    def _put_segment(self, name: str, segment: Segment, frame: bytes, raw: bytes) -> None:
        path = self.reader.segment_file(name, segment.name)
        batch = self._batch
        if batch is not None:
            if (name, segment.name) in batch.raw:
                return
            batch.raw[(name, segment.name)] = raw  # a fold in this batch may read it
            batch.files.write(path, frame)
            batch.folders.add(self._ensure())
        elif path.exists():
            return  # named by its content: the same bytes are there already
        else:
            self._ensure()
            atomic_write(path, frame, sync_dir=False)
        self._wrote(len(frame))

    def _segment_bytes(self, name: str, segment: Segment) -> bytes:
        if self._batch is not None:
            pending = self._batch.raw.get((name, segment.name))
            if pending is not None:
                return pending
        return self.reader.segment(name, segment)

    def _sync(self) -> None:
        """Segments renamed into the folder are durable before a HEAD names them."""
        if self._batch is None:
            fsync_dir(self._ensure())

    def _drop_after(self, name: str, names: set[str]) -> None:
        if self._batch is not None:
            self._batch.drops.append((name, names))
        else:
            self._drop_segments(name, names)

    def _write_head(self, chain: Chain, frame: bytes = b"") -> None:
        """Replace *chain*'s HEAD (carrying *frame*, its first segment's, inline). A HEAD
        that carries a segment the new one does not is first linked as that segment's file:
        O(1), and in the folder before the new HEAD replaces it (its rename comes later)."""
        data = replace(chain, updated_ns=self.now_ns()).encode(frame)
        name = key_name(chain.key)
        folder = self._ensure()
        head = self.reader.head_file(name)
        if not frame and chain.segments and self._inline(name) == chain.segments[0].name:
            with contextlib.suppress(FileExistsError):
                os.link(head, self.reader.segment_file(name, chain.segments[0].name))
        if self._batch is not None:
            self._batch.files.write(head, data)
            self._batch.folders.add(folder)
        else:
            atomic_write(head, data)
        self._wrote(len(data))

    def _wrote(self, n: int) -> None:
        self.bytes_written += n
        if self._usage is not None:
            self._usage += n

    def _drop_segments(self, name: str, names: Sequence[str] | set[str]) -> None:
        for segment in names:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.reader.segment_file(name, segment))


class _Batch:
    """What a batch holds until it commits."""

    def __init__(self, files: DurableBatch | None) -> None:
        # segments and HEADs in the order they were written (``DurableBatch`` renames so)
        self.files = DurableBatch() if files is None else files
        self.folders: set[Path] = set()
        self.raw: dict[tuple[str, str], bytes] = {}  # (chain name, segment name) -> bytes
        self.drops: list[tuple[str, set[str]]] = []


def _sync_dirs(folders: set[Path]) -> None:
    """fsync each folder, several at once (a journaling file system folds them together)."""
    fsync_all(fsync_dir, sorted(folders))


def _is_head_name(name: str) -> bool:
    return len(name) == 64 and "." not in name


def _subdirs(folder: Path) -> list[Path]:
    try:
        return [Path(e.path) for e in os.scandir(folder) if e.is_dir(follow_symlinks=False)]
    except FileNotFoundError:
        return []
