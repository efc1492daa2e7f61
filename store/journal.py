"""The journal: an append-only log of ``SourceEvent``s with dense, ever-increasing positions.

::

    journal/segment-000000000000.log    positions 0 … 4,217        (trimmed once every stage
    journal/segment-000000004218.log    positions 4,218 …           has passed them)
    journal/appender.lock               flock of the one process that appends

Each segment is named by the position of its first event and holds frames back to back::

    b"SJ" | u32 payload length | u32 crc32(payload) | payload = store.codec envelope of the event

One appender (the watcher) writes whole batches with a single ``write`` and ``fsync``s before it
reports the positions, so a position a stage has seen is durable. A crash can leave a torn frame
at the end of the last segment: readers treat it as not written yet, and the next appender cuts
it off before appending. Positions continue across restarts (the appender resumes after the last
whole frame) and across trimming (the newest segment is never deleted). Readers never write.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Final, Protocol

from store.atomic import FILE_MODE, ensure_dir, fsync_dir
from store.codec import decode, encode
from store.errors import CorruptRecord, StoreLocked
from store.records import SourceEvent

__all__ = [
    "DEFAULT_SEGMENT_BYTES",
    "FileJournal",
    "Journal",
    "JournalStats",
    "parse_segment_name",
    "segment_name",
]

DEFAULT_SEGMENT_BYTES: Final = 4 * 1024 * 1024
_MAGIC: Final = b"SJ"
_HEADER: Final = struct.Struct("<2sII")
_PREFIX: Final = "segment-"
_SUFFIX: Final = ".log"
_DIGITS: Final = 12
_LOCK: Final = "appender.lock"
_READ_CHUNK: Final = 1 << 20


def segment_name(first_position: int) -> str:
    if not 0 <= first_position < 10**_DIGITS:
        raise ValueError(f"journal position out of range: {first_position}")
    return f"{_PREFIX}{first_position:0{_DIGITS}d}{_SUFFIX}"


def parse_segment_name(name: str) -> int | None:
    """The first position a segment file name encodes, or None if it is not a segment."""
    if not (name.startswith(_PREFIX) and name.endswith(_SUFFIX)):
        return None
    digits = name[len(_PREFIX) : -len(_SUFFIX)]
    if len(digits) != _DIGITS or not digits.isascii() or not digits.isdigit():
        return None
    return int(digits)


@dataclass(frozen=True, slots=True)
class JournalStats:
    """Where the journal stands: ``head`` is the last position (-1 when nothing was appended)."""

    first: int
    head: int
    segments: int
    bytes: int


class Journal(Protocol):
    """What the pipeline needs from a journal (``FileJournal``; ``MemoryJournal`` in tests)."""

    bytes_written: int

    def append(self, events: Sequence[SourceEvent]) -> list[SourceEvent]: ...

    def read(self, after: int, limit: int = 1000) -> list[SourceEvent]: ...

    def head(self) -> int: ...

    def trim(self, through: int) -> int: ...

    def statistics(self) -> JournalStats: ...

    def close(self) -> None: ...


@dataclass(slots=True)
class _Cursor:
    """A reader's place: the segment it is in, the byte offset and the position found there."""

    base: int
    offset: int
    position: int
    fd: int


class FileJournal:
    """The journal folder. ``writable=True`` makes this the one appender (flock, else
    StoreLocked); ``start_at`` is where positions begin when the folder holds no segment."""

    def __init__(
        self,
        folder: Path,
        *,
        writable: bool = False,
        segment_bytes: int = DEFAULT_SEGMENT_BYTES,
        start_at: int = 0,
    ) -> None:
        self.folder = Path(folder)
        self.segment_bytes = segment_bytes
        self.bytes_written = 0
        self._writable = writable
        self._lock_fd: int | None = None
        self._append_fd: int | None = None
        self._append_base = -1
        self._append_size = 0
        self._next = start_at
        self._cursor: _Cursor | None = None
        if writable:
            ensure_dir(self.folder)
            self._lock()
            self._recover(start_at)

    # -- appending -------------------------------------------------------------------------

    def append(self, events: Sequence[SourceEvent]) -> list[SourceEvent]:
        """Give *events* the next positions, write them and fsync; returns them positioned."""
        if not self._writable:
            raise PermissionError("this journal was opened read-only")
        if not events:
            return []
        placed = [replace(e, position=self._next + i) for i, e in enumerate(events)]
        frames = b"".join(_frame(encode(e)) for e in placed)
        if self._append_fd is None or self._append_size >= self.segment_bytes:
            self._rotate()
        fd = self._append_fd
        assert fd is not None
        view = memoryview(frames)
        try:
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.fsync(fd)
        except BaseException:
            # Cut a half-written batch off now, or every later frame would sit behind it.
            with contextlib.suppress(OSError):
                os.ftruncate(fd, self._append_size)
            raise
        self._append_size += len(frames)
        self.bytes_written += len(frames)
        self._next += len(placed)
        return placed

    def head(self) -> int:
        """The last position appended (-1 when none). Readers scan the newest segment."""
        if self._writable:
            return self._next - 1
        return self.statistics().head

    def _lock(self) -> None:
        fd = os.open(self.folder / _LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise StoreLocked(self.folder) from None
        self._lock_fd = fd

    def _recover(self, start_at: int) -> None:
        """Resume after the last whole frame, cutting off a torn one a crash left behind."""
        bases = self._bases()
        if not bases:
            self._next = start_at
            return
        base = bases[-1]
        path = self.folder / segment_name(base)
        data = path.read_bytes()
        count, good = _whole_frames(data, base, path)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
        if good < len(data):
            os.ftruncate(fd, good)
            os.fsync(fd)
        self._append_fd = fd
        self._append_base = base
        self._append_size = good
        self._next = base + count

    def _rotate(self) -> None:
        if self._append_fd is not None:
            os.close(self._append_fd)
        path = self.folder / segment_name(self._next)
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
        try:
            fd = os.open(path, flags, FILE_MODE)
        except FileExistsError:
            # An empty segment of this base survived a crash right after its creation.
            if path.stat().st_size:
                raise CorruptRecord(path, "segment to start already holds events") from None
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
        os.fchmod(fd, FILE_MODE)
        fsync_dir(self.folder)
        self._append_fd = fd
        self._append_base = self._next
        self._append_size = 0

    # -- reading ---------------------------------------------------------------------------

    def read(self, after: int, limit: int = 1000) -> list[SourceEvent]:
        """Up to *limit* events with positions > *after*, in order ([] when none yet).

        Raises CorruptRecord when positions are not dense (a segment was trimmed that a reader
        still needed, or the folder was damaged).
        """
        cursor = self._cursor
        if cursor is None or cursor.position > after + 1:
            cursor = self._seek(after + 1)
            if cursor is None:
                return []
        out: list[SourceEvent] = []
        while len(out) < limit:
            path = self.folder / segment_name(cursor.base)
            # no more decoded than asked for (frames up to *after* are passed over, unread)
            wanted = limit - len(out) + max(0, after + 1 - cursor.position)
            frames = _scan(
                _read_frames(cursor.fd, cursor.offset), cursor.position, path, limit=wanted
            )
            if not frames:
                if not self._advance(cursor):
                    break
                continue
            for event, size in frames:
                cursor.offset += size
                cursor.position = event.position + 1
                if event.position > after:
                    out.append(event)
                    if len(out) == limit:
                        break
        return out

    def _seek(self, position: int) -> _Cursor | None:
        """A cursor at the first frame with a position >= *position* (None: no segment yet)."""
        if self._cursor is not None:
            os.close(self._cursor.fd)
            self._cursor = None
        bases = self._bases()
        if not bases:
            return None
        if position < bases[0]:
            raise CorruptRecord(
                self.folder / segment_name(bases[0]),
                f"journal position {position} was trimmed (oldest kept: {bases[0]})",
            )
        base = max(b for b in bases if b <= position)
        fd = os.open(self.folder / segment_name(base), os.O_RDONLY | os.O_CLOEXEC)
        cursor = _Cursor(base=base, offset=0, position=base, fd=fd)
        self._cursor = cursor
        path = self.folder / segment_name(base)
        if position > base:
            # The frames before *position* are passed over by their headers: positions are
            # dense, so the n-th whole frame holds base + n (the first is decoded, for its
            # format and position; the one read next is checked when it is read).
            _scan(_read_frames(fd, 0), base, path, limit=1)
        while cursor.position < position:
            skipped, size, _ = _skip(_read_frames(fd, cursor.offset), position - cursor.position)
            if not skipped:
                break
            cursor.offset += size
            cursor.position += skipped
        return cursor

    def _advance(self, cursor: _Cursor) -> bool:
        """Move to the segment that starts where this one ended, if the appender made one."""
        path = self.folder / segment_name(cursor.position)
        if cursor.position == cursor.base:
            return False
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            if any(b > cursor.position for b in self._bases()):
                raise CorruptRecord(
                    self.folder / segment_name(cursor.base),
                    f"journal segment ends before position {cursor.position} "
                    "and no segment continues it",
                ) from None
            return False
        os.close(cursor.fd)
        cursor.fd = fd
        cursor.base = cursor.position
        cursor.offset = 0
        return True

    # -- housekeeping ----------------------------------------------------------------------

    def trim(self, through: int) -> int:
        """Delete segments whose events all have positions <= *through* (never the newest)."""
        bases = self._bases()
        removed = 0
        for base, following in zip(bases, bases[1:], strict=False):
            if following - 1 > through:
                break
            with contextlib.suppress(FileNotFoundError):
                (self.folder / segment_name(base)).unlink()
                removed += 1
        if removed:
            fsync_dir(self.folder)
        return removed

    def statistics(self) -> JournalStats:
        bases = self._bases()
        if not bases:
            return JournalStats(first=self._next, head=self._next - 1, segments=0, bytes=0)
        total = 0
        for base in bases:
            with contextlib.suppress(FileNotFoundError):
                total += (self.folder / segment_name(base)).stat().st_size
        last = self.folder / segment_name(bases[-1])
        try:
            data = last.read_bytes()
        except FileNotFoundError:
            data = b""
        count, _ = _whole_frames(data, bases[-1], last)
        head = bases[-1] + count - 1
        return JournalStats(first=bases[0], head=head, segments=len(bases), bytes=total)

    def _bases(self) -> list[int]:
        try:
            names = os.listdir(self.folder)
        except FileNotFoundError:
            return []
        return sorted(b for b in map(parse_segment_name, names) if b is not None)

    def close(self) -> None:
        for fd in (self._append_fd, self._lock_fd):
            if fd is not None:
                os.close(fd)
        self._append_fd = self._lock_fd = None
        if self._cursor is not None:
            os.close(self._cursor.fd)
            self._cursor = None


def _frame(payload: bytes) -> bytes:
    return _HEADER.pack(_MAGIC, len(payload), zlib.crc32(payload)) + payload


def _read_frames(fd: int, offset: int) -> bytes:
    """Bytes from *offset*: a chunk, or more when the first frame is bigger than a chunk."""
    data = os.pread(fd, _READ_CHUNK, offset)
    if len(data) >= _HEADER.size:
        _, length, _ = _HEADER.unpack_from(data)
        if _HEADER.size + length > len(data) == _READ_CHUNK:
            data = os.pread(fd, _HEADER.size + length, offset)
    return data


def _whole(data: bytes, offset: int) -> int | None:
    """Where the frame at *offset* ends, if it is whole and its checksum holds; else None.

    A frame that is incomplete or fails its checksum ends every scan: at the end of the newest
    segment that is a write in progress (or torn by a crash, cut off by the next appender).
    """
    if len(data) - offset < _HEADER.size:
        return None
    magic, length, crc = _HEADER.unpack_from(data, offset)
    end: int = offset + _HEADER.size + length
    if magic != _MAGIC or end > len(data):
        return None
    if zlib.crc32(memoryview(data)[offset + _HEADER.size : end]) != crc:
        return None
    return end


def _skip(data: bytes, count: int) -> tuple[int, int, int]:
    """Up to *count* whole frames at the start of *data*, not decoded: (how many, their
    bytes, where the last of them starts)."""
    offset = last = frames = 0
    while frames < count and (end := _whole(data, offset)) is not None:
        last, offset = offset, end
        frames += 1
    return frames, offset, last


def _whole_frames(data: bytes, base: int, path: Path) -> tuple[int, int]:
    """(how many, their bytes): the whole frames of the segment *data* starting at *base*.

    Every header and checksum is read, but only the first and the last frame decoded (the
    segment's format, and the positions: dense in between). Decoding a segment of a few MB
    whole took every process of a start tens of milliseconds before it could watch or index
    (issue 22 item 11).
    """
    count, good, last_at = _skip(data, len(data))
    if count:
        _scan(data, base, path, limit=1)
        _scan(data[last_at:good], base + count - 1, path)
    return count, good


def _scan(
    data: bytes, first: int, path: Path, *, limit: int | None = None
) -> list[tuple[SourceEvent, int]]:
    """The whole frames at the start of *data* (up to *limit*) with their sizes, positions
    first, first+1, … (see ``_whole``)."""
    out: list[tuple[SourceEvent, int]] = []
    offset = 0
    expected = first
    while limit is None or len(out) < limit:
        end = _whole(data, offset)
        if end is None:
            break
        payload = data[offset + _HEADER.size : end]
        event = decode(payload, expect=SourceEvent, path=str(path))
        if event.position != expected:
            raise CorruptRecord(path, f"journal position {event.position}, expected {expected}")
        out.append((event, end - offset))
        expected += 1
        offset = end
    return out
