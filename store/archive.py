"""The archive: the bytes of every indexed session, kept for when its source is gone.

Everything else sessiondex writes is derived from the session files; the archive is the one
part that is not, so it lives beside the index folder, never in it (``<indexDir>-archive`` by
default, ``[archive] dir``): ``pipeline rebuild`` and deleting the index folder leave it, and
the index folder keeps holding only derived, credential-free state. Like the session files it
copies, it holds what they hold (credentials included), 0600/0700::

    <archive>/chains/<key>                     one session's chain (its HEAD, replaced atomically),
                                               with a whole-built chain's one segment inline
    <archive>/chains/<key>.<b3>.zst            its other segments: zstd frames of byte ranges
    <archive>/tombstones                       blake3 of every forgotten path (never the path)
    <archive>/lock                             flock of a tombstone writer

``<key>`` is the blake3 of the session's index path (``key_name``). A segment is named by the
blake3 of its *uncompressed* bytes, so a reader proves each one, and the chain's ``hash`` is
the blake3 of all of them in order: the session's ``source_hash`` while the archive holds
exactly the bytes indexed. An append adds a segment (the chain's last ``FANOUT`` segments of
one level are folded into one of the next level, so a chain stays a few dozen segments long);
a rewrite starts a new chain. A session whose source was rewritten so that earlier entries are
gone keeps the old chain under a key of its own (``retired_key``). Files are 0600 in 0700
folders, written temp + fsync + rename.

One folder holds every chain: a build writes one file per session into it and syncs that one
folder per batch (a folder per session cost a mkdir and a folder fsync per session: ~1 % of a
build's CPU on the size-S bench). A HEAD is ``SDXH``, the 4-byte length of the header, the
header (msgpack ``[magic, 2, inline, *chain]``) and then ``inline`` bytes: the zstd frame of
the chain's first segment, when the chain was written whole (a build: one file per session,
not two). The first later write of that chain's HEAD first hard-links the old HEAD as
``<key>.<b3>.zst`` (O(1), before the new HEAD replaces it), so a segment file may be such a
HEAD: its frame is the one inside.

Older builds wrote ``<archive>/sessions/<hh>/<key>/HEAD`` (a bare msgpack header, version 1)
and ``.../<key>/<b3>.zst``: such a chain is read where it is, and moved into ``chains/`` (its
segments linked, then its HEAD written, then the old folder removed) when it is next written.

This module is the read side, shared by the pipeline and the query process (which reads an
archived session's chain to verify its follow tokens and ``query export --format source``);
``store.archive_writer`` writes.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import blake3
import zstandard

from store.codec import pack, unpack
from store.errors import CorruptRecord, StoreError
from store.files import names_quietly, open_quietly, read_quietly
from store.reasons import ARCHIVE_FULL
from store.schema import BOOL, TUPLE, Wired, nested_tuple, wire, wired

__all__ = [
    "ARCHIVED",
    "FANOUT",
    "CHAINS",
    "HEAD",
    "KEPT",
    "NOT_KEPT",
    "RETIRED_MARK",
    "Archive",
    "ArchiveDamaged",
    "Chain",
    "Head",
    "Segment",
    "decode_head",
    "frame_of",
    "key_name",
    "path_hash",
    "retired_key",
    "source_of",
]

HEAD: Final = "HEAD"
SEGMENT_SUFFIX: Final = ".zst"
TOMBSTONES: Final = "tombstones"
LOCK: Final = "lock"
CHAINS: Final = "chains"
SESSIONS: Final = "sessions"  # the layout of older builds (a folder per chain): read only
FANOUT: Final = 8
_VERSION: Final = 1  # a bare msgpack HEAD (read only) and the tombstones file
_HEAD_VERSION: Final = 2
_MAGIC: Final = b"SDXA"
_HEAD_MAGIC: Final = b"SDXH"
_HEAD_PREFIX: Final = 8  # magic and the header's length
_HEAD_PEEK: Final = 8192  # bytes read to find a header (a longer one takes a second read)

# SessionState.archive: what the archive holds of the session's indexed bytes.
KEPT: Final = "kept"  # exactly the indexed bytes; the source is still there
ARCHIVED: Final = "archived"  # the source is gone: the session is read from the archive
NOT_KEPT: Final = ARCHIVE_FULL  # the cap was reached: these bytes are not (all) kept

# A retired chain's key: the session's path, this mark, the first 16 hex of its source hash.
RETIRED_MARK: Final = "@archived-"


def key_name(key: str) -> str:
    """The folder name of a chain: blake3 of the session's index path."""
    return blake3.blake3(key.encode("utf-8", "surrogateescape")).hexdigest()


def path_hash(path: str) -> str:
    """What a tombstone holds of a forgotten path (the same hash as ``key_name``)."""
    return key_name(path)


def retired_key(path: str, source_hash: str) -> str:
    return f"{path}{RETIRED_MARK}{source_hash[:16]}"


def source_of(key: str) -> str:
    """The source path of an index path (itself, or the path a retired version came from)."""
    at = key.rfind(RETIRED_MARK)
    if at < 0:
        return key
    tail = key[at + len(RETIRED_MARK) :]
    if len(tail) == 16 and all(c in "0123456789abcdef" for c in tail):
        return key[:at]
    return key


@wired
@dataclass(frozen=True, slots=True)
class Segment(Wired):
    """One zstd frame of the chain: ``length`` uncompressed bytes, named by their blake3."""

    name: str
    length: int
    level: int = 0


@wired
@dataclass(frozen=True, slots=True)
class Chain(Wired):
    """What the archive keeps of one session: its bytes ``[0, length)`` as segments.

    ``key`` is the path the session is indexed under (``source`` for a kept session, a
    ``retired_key`` for an old version); ``stamp`` is the source's (dev, inode, size,
    mtime_ns, ctime_ns) when its last bytes were kept, ``meta`` a Claude subagent sidecar.
    ``truncated`` says the cap stopped the chain short of what the source held then.
    """

    key: str
    source: str
    agent: str
    length: int
    hash: str
    stamp: tuple[int, int, int, int, int] = field(metadata=wire(TUPLE))
    segments: tuple[Segment, ...] = field(metadata=wire(nested_tuple(Segment)))
    meta: dict[str, Any] | None = None
    truncated: bool = field(default=False, metadata=wire(BOOL))
    updated_ns: int = 0
    # keys of the old versions of this session kept apart (``retired_key``): checked again at
    # each whole build, and dropped once the file holds their entries again
    retired: tuple[str, ...] = field(default=(), metadata=wire(TUPLE, since=2))

    @property
    def stored(self) -> int:
        """Uncompressed bytes (the same as ``length`` in a whole chain)."""
        return sum(s.length for s in self.segments)

    @classmethod
    def from_head(cls, w: Any, where: str) -> Chain:
        """The chain a version-1 HEAD holds: ``[magic, 1, *fields]``."""
        if not isinstance(w, list) or len(w) < 12 or w[0] != _MAGIC:
            raise CorruptRecord(where, "not an archive chain")
        if w[1] != _VERSION:
            raise CorruptRecord(where, f"archive chain version {w[1]!r}")
        return cls._fields(w[2:], where)

    @classmethod
    def _fields(cls, w: list[Any], where: str) -> Chain:
        try:
            chain = cls.from_wire(w)
        except (IndexError, TypeError, KeyError) as exc:
            raise CorruptRecord(where, f"archive chain fields: {exc}") from exc
        if len(chain.stamp) != 5:
            raise CorruptRecord(where, f"archive chain stamp: {chain.stamp!r}")
        return chain

    def encode(self, frame: bytes = b"") -> bytes:
        """A HEAD file of this chain; *frame*: its first segment's, carried inline."""
        if frame and not self.segments:
            raise ValueError("an inline frame needs a segment to be")
        header = pack([_MAGIC, _HEAD_VERSION, len(frame), *self.to_wire()])
        return b"".join((_HEAD_MAGIC, len(header).to_bytes(4, "big"), header, frame))


def decode_head(data: bytes, size: int, where: str) -> tuple[Chain, int]:
    """The chain of a HEAD file of *size* bytes whose first bytes are *data* (its header at
    least), and the length of the inline frame at its end (0: none)."""
    if not data.startswith(_HEAD_MAGIC):
        if len(data) != size:
            raise CorruptRecord(where, "archive chain: short read")
        try:
            return Chain.from_head(unpack(data), where), 0
        except ValueError as exc:
            raise CorruptRecord(where, f"archive chain: {exc}") from exc
    end = _HEAD_PREFIX + header_length(data, where)
    if len(data) < end:
        raise CorruptRecord(where, "archive chain: header cut short")
    try:
        w = unpack(data[_HEAD_PREFIX:end])
    except ValueError as exc:
        raise CorruptRecord(where, f"archive chain: {exc}") from exc
    if not isinstance(w, list) or len(w) < 13 or w[0] != _MAGIC:
        raise CorruptRecord(where, "not an archive chain")
    if w[1] != _HEAD_VERSION:
        raise CorruptRecord(where, f"archive chain version {w[1]!r}")
    inline = w[2]
    if not isinstance(inline, int) or end + inline != size:
        raise CorruptRecord(where, "archive chain: its inline segment is cut short")
    chain = Chain._fields(w[3:], where)
    if inline and not chain.segments:
        raise CorruptRecord(where, "archive chain: an inline frame without a segment")
    return chain, inline


def header_length(data: bytes, where: str) -> int:
    if len(data) < _HEAD_PREFIX:
        raise CorruptRecord(where, "archive chain: cut short")
    return int.from_bytes(data[4:_HEAD_PREFIX], "big")


def frame_of(data: bytes, where: str) -> bytes:
    """The zstd frame a segment file holds: itself, or the inline one of a HEAD linked as a
    segment (``ArchiveWriter`` keeps a whole-built chain's segment so)."""
    if not data.startswith(_HEAD_MAGIC):
        return data
    _, inline = decode_head(data, len(data), where)
    if not inline:
        raise CorruptRecord(where, "archive segment: a HEAD without an inline frame")
    return data[len(data) - inline :]


@dataclass(frozen=True, slots=True)
class Head:
    """What a HEAD file says: its chain, the length of the frame of ``chain.segments[0]``
    it carries inline (0: none), and whether it is in an older build's layout."""

    chain: Chain
    inline: int
    legacy: bool


def _is_name(name: str) -> bool:
    return len(name) == 64 and "." not in name


class ArchiveDamaged(StoreError):
    """A chain's segment is missing or its bytes are not the ones its name promises."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: the archived copy is damaged ({reason})")
        self.path = path
        self.reason = reason


class Archive:
    """Reads one archive folder (never writes). Chains are cached by their HEAD's stat."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.chains_dir = self.root / CHAINS
        self.sessions = self.root / SESSIONS  # an older build's layout
        self._heads: dict[str, tuple[tuple[int, int, int], Head]] = {}
        self._tombstones: tuple[tuple[int, int, int], frozenset[str]] | None = None

    # -- where ----------------------------------------------------------------------------

    def head_file(self, name: str) -> Path:
        """The HEAD of the chain *name* (``key_name``)."""
        return self.chains_dir / name

    def segment_file(self, name: str, segment: str) -> Path:
        return self.chains_dir / f"{name}.{segment}{SEGMENT_SUFFIX}"

    def head_path(self, key: str) -> Path:
        return self.head_file(key_name(key))

    def folder_of(self, name: str) -> Path:
        """The folder an older build kept the chain *name* in."""
        return self.sessions / name[:2] / name

    def folder(self, key: str) -> Path:
        return self.folder_of(key_name(key))

    # -- chains ---------------------------------------------------------------------------

    def head(self, key: str) -> Chain | None:
        """The chain of the session indexed as *key*, or None (raises CorruptRecord when its
        HEAD cannot be decoded)."""
        return self.head_of(key_name(key))

    def head_of(self, name: str) -> Chain | None:
        found = self.entry(name)
        return found.chain if found is not None else None

    def entry(self, name: str) -> Head | None:
        """The HEAD of the chain *name* (only its header read), or None."""
        found = self._entry(name, self.head_file(name), False)
        if found is None:
            found = self._entry(name, self.folder_of(name) / HEAD, True)
        return found

    def _entry(self, name: str, path: Path, legacy: bool) -> Head | None:
        try:
            st = os.stat(path)
        except (FileNotFoundError, NotADirectoryError):
            self._heads.pop(name, None)
            return None
        stamp = (st.st_ino, st.st_mtime_ns, st.st_size)
        hit = self._heads.get(name)
        if hit is not None and hit[0] == stamp and hit[1].legacy == legacy:
            return hit[1]
        try:
            chain, inline = read_head(path)
        except FileNotFoundError:
            return None
        found = Head(chain, inline, legacy)
        if len(self._heads) >= 65_536:
            self._heads.clear()
        self._heads[name] = (stamp, found)
        return found

    def names(self) -> set[str]:
        """The name of every chain (listing only, nothing read)."""
        out: set[str] = set()
        # listed without moving their access times (store.files): a no-op rerun writes nothing
        with contextlib.suppress(FileNotFoundError):
            out.update(n for n in names_quietly(self.chains_dir) if _is_name(n))
        try:
            fans = names_quietly(self.sessions)
        except FileNotFoundError:
            return out
        for fan in fans:
            if fan.startswith("."):
                continue
            try:
                names = names_quietly(self.sessions / fan, os.O_NOFOLLOW)
            except (FileNotFoundError, NotADirectoryError):
                continue  # gone meanwhile, or a file among the fans
            except OSError as exc:
                if exc.errno != errno.ELOOP:
                    raise
                continue  # a link among the fans: not ours
            out.update(n for n in names if not n.startswith("."))
        return out

    def chains(self) -> Iterator[Chain]:
        """Every readable chain (a damaged HEAD is skipped: ``pipeline doctor`` names it)."""
        for name in sorted(self.names()):
            try:
                chain = self.head_of(name)
            except CorruptRecord:
                continue
            if chain is not None:
                yield chain

    def read(self, chain: Chain) -> bytes:
        """The chain's bytes, every segment and the whole proven against their blake3
        (ArchiveDamaged otherwise)."""
        name = key_name(chain.key)
        parts: list[bytes] = []
        whole = blake3.blake3()
        for segment in chain.segments:
            raw = self.segment(name, segment)
            whole.update(raw)
            parts.append(raw)
        data = b"".join(parts)
        if len(data) != chain.length or whole.hexdigest() != chain.hash:
            raise ArchiveDamaged(str(self.head_file(name)), "the segments do not make the chain")
        return data

    def segment(self, name: str, segment: Segment) -> bytes:
        """The bytes of one segment of the chain *name*, proven against its name."""
        path = self.segment_file(name, segment.name)
        try:
            frame = self._frame(name, segment)
            raw = zstandard.ZstdDecompressor().decompress(frame, max_output_size=segment.length)
        except (OSError, CorruptRecord, zstandard.ZstdError) as exc:
            raise ArchiveDamaged(str(path), f"segment unreadable: {exc}") from exc
        if len(raw) != segment.length or blake3.blake3(raw).hexdigest() != segment.name:
            raise ArchiveDamaged(str(path), "segment bytes do not match its name")
        return raw

    def _frame(self, name: str, segment: Segment) -> bytes:
        """The segment's frame: its own file, else the HEAD that carries it inline, else an
        older build's folder; and its own file again (a writer may have linked it there and
        replaced the HEAD meanwhile)."""
        path = self.segment_file(name, segment.name)
        legacy = self.folder_of(name)
        for where in (path, self.head_file(name), legacy / HEAD):
            try:
                data = read_quietly(where)
            except FileNotFoundError:
                continue
            if where == path:
                return frame_of(data, str(where))
            chain, inline = decode_head(data, len(data), str(where))
            if inline and chain.segments[0].name == segment.name:
                return data[len(data) - inline :]
        old = legacy / f"{segment.name}{SEGMENT_SUFFIX}"
        for where in (old, path):
            with contextlib.suppress(FileNotFoundError):
                return frame_of(read_quietly(where), str(where))
        raise FileNotFoundError(str(path))

    # -- what it costs --------------------------------------------------------------------

    def usage(self) -> int:
        """Bytes of every file under the archive folder."""
        total = 0
        for dirpath, _, files in os.walk(self.root):
            for name in files:
                try:
                    total += os.lstat(os.path.join(dirpath, name)).st_size
                except FileNotFoundError:
                    continue
        return total

    # -- forgotten paths ------------------------------------------------------------------

    def tombstones(self) -> frozenset[str]:
        """``path_hash`` of every forgotten path (read again when the file changed)."""
        path = self.root / TOMBSTONES
        try:
            st = os.stat(path)
        except FileNotFoundError:
            self._tombstones = None
            return frozenset()
        stamp = (st.st_ino, st.st_mtime_ns, st.st_size)
        if self._tombstones is not None and self._tombstones[0] == stamp:
            return self._tombstones[1]
        found = read_tombstones(read_quietly(path), str(path))
        self._tombstones = (stamp, found)
        return found

    def tombstones_stamp(self) -> tuple[int, int, int] | None:
        try:
            st = os.stat(self.root / TOMBSTONES)
        except FileNotFoundError:
            return None
        return (st.st_ino, st.st_mtime_ns, st.st_size)

    def forgotten(self, path: str) -> bool:
        return path_hash(path) in self.tombstones()


def read_head(path: Path) -> tuple[Chain, int]:
    """The chain of the HEAD file at *path* and its inline frame's length, reading the
    header only (raises CorruptRecord when it cannot be decoded)."""
    fd = open_quietly(path)
    try:
        size = os.fstat(fd).st_size
        data = os.pread(fd, _HEAD_PEEK, 0)
        if data.startswith(_HEAD_MAGIC):
            want = _HEAD_PREFIX + header_length(data, str(path))
        else:
            want = size  # version 1: the header is the whole file
        while len(data) < min(want, size):
            more = os.pread(fd, min(want, size) - len(data), len(data))
            if not more:
                break
            data += more
    finally:
        os.close(fd)
    return decode_head(data, size, str(path))


def read_tombstones(data: bytes, where: str) -> frozenset[str]:
    try:
        wire = unpack(data)
    except ValueError as exc:
        raise CorruptRecord(where, f"tombstones: {exc}") from exc
    if not isinstance(wire, list) or len(wire) != 3 or wire[0] != _MAGIC:
        raise CorruptRecord(where, "not a tombstone file")
    return frozenset(str(h) for h in wire[2])


def encode_tombstones(hashes: frozenset[str]) -> bytes:
    return pack([_MAGIC, _VERSION, sorted(hashes)])
