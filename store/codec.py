"""The one msgpack codec: every file the store writes goes through ``encode`` / ``decode``.

A record file is ``msgpack([b"SDX", SCHEMA_VERSION, kind, payload])`` where ``payload`` is
``record.to_wire()``. Large ``entries``, ``shard`` and ``chunk`` payloads (above 64 KiB) and
cold digests above 1 KiB are packed on their own and compressed with zstd; the envelope then
holds the compressed bytes and a fifth field naming the compression
(``[b"SDX", version, kind, zbytes, "zstd"]``). Small payloads stay plain.

The fifth field is the compression format's version: ``decode`` still reads the ``"zlib"``
envelopes older builds wrote (so an index survives the upgrade and is rewritten session by
session as sources change), and a reader that does not know a name refuses the record as
corrupt instead of misreading it. Measured on the size-S bench corpus (105 MB of sessions,
zlib level 1/6 before): entries 2.2x -> 2.7x smaller than packed at a fifth of the time
(0.85 -> 0.31 s for 83 MB), cold digests 2.2x -> 2.4x at a third of the time.

Bytes are deterministic: the same record always encodes to the same bytes (maps whose order
could vary are sorted by ``to_wire``; zstd is single-threaded at a fixed level), which is what
lets the writer name records by content.
"""

from __future__ import annotations

import threading
import zlib
from typing import Any, Final, TypeVar, overload

import msgpack
import zstandard

from store.errors import CorruptRecord, SchemaVersionError
from store.records import (
    SCHEMA_VERSION,
    ColdDigest,
    HotShard,
    Manifest,
    SessionChunk,
    SessionEntries,
    SourceEvent,
)

__all__ = [
    "COMPRESS_THRESHOLD",
    "KINDS",
    "MAGIC",
    "Record",
    "decode",
    "encode",
    "kind_of",
    "pack",
    "unpack",
]

MAGIC: Final = b"SDX"
# Below this a payload is stored as is: the frame header and the extra unpack are not worth it.
COMPRESS_THRESHOLD: Final = 64 * 1024
_ZSTD: Final = "zstd"
_ZLIB: Final = "zlib"  # read only: what builds before zstd wrote
# kind -> (threshold, zstd level). Cold digests are read once per generation by the query
# process but kept for every old session, so they trade a slower level for size: sorted
# vocabularies pack to 13.7% of source at level 4 (13.2% at 6 for twice the time, 14.0% at 3;
# zlib 6 gave 14.7%). Entries are written for every session on every whole build and read
# only to expand or hydrate one: level 1 (S corpus, 3 build pairs: ~2-3 % less build CPU,
# the index 3.3 % bigger than at level 3), as the archive does for the sources.
_COMPRESSION: Final[dict[str, tuple[int, int]]] = {
    "entries": (COMPRESS_THRESHOLD, 1),
    "shard": (COMPRESS_THRESHOLD, 3),
    "digest": (1024, 4),
    "chunk": (COMPRESS_THRESHOLD, 3),
}

Record = SessionEntries | HotShard | ColdDigest | Manifest | SourceEvent | SessionChunk
T = TypeVar("T", SessionEntries, HotShard, ColdDigest, Manifest, SourceEvent, SessionChunk)

KINDS: Final[dict[str, type[Record]]] = {
    "entries": SessionEntries,
    "shard": HotShard,
    "digest": ColdDigest,
    "manifest": Manifest,
    "event": SourceEvent,
    "chunk": SessionChunk,
}
_KIND_OF: Final[dict[type[Record], str]] = {cls: kind for kind, cls in KINDS.items()}


def kind_of(record: Record | type[Record]) -> str:
    """The envelope kind of a record (or record type): ``entries``, ``shard``, …"""
    cls = record if isinstance(record, type) else type(record)
    try:
        return _KIND_OF[cls]
    except KeyError:
        raise TypeError(f"not a store record: {cls.__name__}") from None


def pack(obj: Any) -> bytes:
    """msgpack bytes of *obj*, keeping file names that are not UTF-8 byte for byte.

    Paths come from the file system as ``os.fsdecode`` strings: a byte that is not UTF-8 is a
    lone surrogate (U+DC80-U+DCFF) there, which strict UTF-8 refuses. Entry text never holds
    one (normalizers clean it), so only such names take the slower second try, which stores
    the name's own bytes; ``unpack`` turns them back into the same string.
    """
    try:
        data: bytes = msgpack.packb(obj, use_bin_type=True)
    except UnicodeEncodeError:
        data = msgpack.packb(obj, use_bin_type=True, unicode_errors="surrogateescape")
    return data


def unpack(data: bytes) -> Any:
    """The value ``pack`` made (file names that are not UTF-8 come back as they went in)."""
    return msgpack.unpackb(
        data, raw=False, strict_map_key=False, use_list=True, unicode_errors="surrogateescape"
    )


class _Contexts(threading.local):
    """zstd contexts are not thread-safe, and the query server decodes on several threads."""

    def __init__(self) -> None:
        self.compressors: dict[int, zstandard.ZstdCompressor] = {}
        self.decompressor = zstandard.ZstdDecompressor()
        # The last cold digest encoded and its bytes: the digest stage sizes a digest against
        # its cache cap, then the writer stores it; it is compressed once, not twice. (Only
        # digests: they are small, and a long-lived process should not keep a big record.)
        self.last: tuple[ColdDigest, bytes] | None = None

    def compressor(self, level: int) -> zstandard.ZstdCompressor:
        found = self.compressors.get(level)
        if found is None:
            found = self.compressors[level] = zstandard.ZstdCompressor(level=level)
        return found


_CONTEXTS: Final = _Contexts()


def encode(record: Record) -> bytes:
    """The file bytes of *record*: the envelope, compressed when large."""
    last = _CONTEXTS.last
    # Records are frozen values, so the very same object encodes to the very same bytes.
    if last is not None and last[0] is record:
        return last[1]
    kind = kind_of(record)
    wire = record.to_wire()
    compression = _COMPRESSION.get(kind)
    data: bytes | None = None
    if compression is not None:
        threshold, level = compression
        packed = pack(wire)
        if len(packed) > threshold:
            zbytes = _CONTEXTS.compressor(level).compress(packed)
            data = pack([MAGIC, SCHEMA_VERSION, kind, zbytes, _ZSTD])
    if data is None:
        data = pack([MAGIC, SCHEMA_VERSION, kind, wire])
    if isinstance(record, ColdDigest):
        _CONTEXTS.last = (record, data)
    return data


def _decompress(name: object, payload: bytes) -> bytes:
    if name == _ZSTD:
        # The frame records its content size (compress() writes it), bounding the output.
        out: bytes = _CONTEXTS.decompressor.decompress(payload)
        return out
    return zlib.decompress(payload)


@overload
def decode(data: bytes, *, expect: type[T], path: str = ...) -> T: ...
@overload
def decode(data: bytes, *, expect: None = None, path: str = ...) -> Record: ...
def decode(data: bytes, *, expect: type[Any] | None = None, path: str = "<bytes>") -> Record:
    """Decode record file bytes, checking magic, schema version, kind and shape.

    Raises CorruptRecord for anything that is not a complete record of the expected kind,
    and SchemaVersionError for a record another schema version wrote.
    """
    try:
        envelope = unpack(data)
    except Exception as exc:  # msgpack raises several unrelated types on bad input
        raise CorruptRecord(path, f"not msgpack: {type(exc).__name__}: {exc}") from exc
    if not isinstance(envelope, list) or len(envelope) not in (4, 5):
        raise CorruptRecord(path, "not a record envelope")
    if envelope[0] != MAGIC:
        raise CorruptRecord(path, "wrong magic")
    if envelope[1] != SCHEMA_VERSION:
        raise SchemaVersionError(path, envelope[1], SCHEMA_VERSION)
    kind = envelope[2]
    cls = KINDS.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise CorruptRecord(path, f"unknown record kind {kind!r}")
    if expect is not None and cls is not expect:
        raise CorruptRecord(path, f"expected a {kind_of(expect)} record, found {kind}")
    payload = envelope[3]
    if len(envelope) == 5:
        if envelope[4] not in (_ZSTD, _ZLIB) or not isinstance(payload, bytes):
            raise CorruptRecord(path, f"unknown compression {envelope[4]!r}")
        try:
            payload = unpack(_decompress(envelope[4], payload))
        except Exception as exc:
            raise CorruptRecord(path, f"bad compressed payload: {exc}") from exc
    if not isinstance(payload, list):
        raise CorruptRecord(path, f"{kind} payload is not a list")
    try:
        return cls.from_wire(payload)
    except (IndexError, KeyError, TypeError, ValueError) as exc:
        raise CorruptRecord(path, f"{kind} payload has the wrong shape: {exc}") from exc
