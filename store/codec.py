"""The one msgpack codec: every file the store writes goes through ``encode`` / ``decode``.

A record file is ``msgpack([b"SDX", SCHEMA_VERSION, kind, payload])`` where ``payload`` is
``record.to_wire()``. Large ``entries`` and ``shard`` payloads are packed on their own and
compressed with zlib level 1 (cold digests above 1 KiB too, at level 6); the envelope then
holds the compressed bytes and a fifth field naming the compression
(``[b"SDX", version, kind, zbytes, "zlib"]``). Measured on the real Pi and Claude fixtures
(110-690 KB packed): files shrink 3.4-4.1x; decoding costs about 3 µs more per packed KB (a
690 KB session decodes in ~5 ms instead of ~3 ms), and encoding ~7 µs per KB. Small payloads
stay plain.

Bytes are deterministic: the same record always encodes to the same bytes (maps whose order
could vary are sorted by ``to_wire``), which is what lets the writer name records by content.
"""

from __future__ import annotations

import zlib
from typing import Any, Final, TypeVar, overload

import msgpack

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
]

MAGIC: Final = b"SDX"
# Below this a payload is stored as is: zlib's header and the extra unpack are not worth it.
COMPRESS_THRESHOLD: Final = 64 * 1024
_ZLIB: Final = "zlib"
# kind -> (threshold, zlib level). Cold digests are read once per generation by the query
# process but kept for every old session, so they trade a slower level for size: sorted
# vocabularies compress about 2x at level 6 (33% -> 15% of source on the generated corpus).
_COMPRESSION: Final[dict[str, tuple[int, int]]] = {
    "entries": (COMPRESS_THRESHOLD, 1),
    "shard": (COMPRESS_THRESHOLD, 1),
    "digest": (1024, 6),
    "chunk": (COMPRESS_THRESHOLD, 1),
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


def _pack(obj: Any) -> bytes:
    data: bytes = msgpack.packb(obj, use_bin_type=True)
    return data


def encode(record: Record) -> bytes:
    """The file bytes of *record*: the envelope, compressed when large."""
    kind = kind_of(record)
    wire = record.to_wire()
    compression = _COMPRESSION.get(kind)
    if compression is not None:
        threshold, level = compression
        packed = _pack(wire)
        if len(packed) > threshold:
            return _pack([MAGIC, SCHEMA_VERSION, kind, zlib.compress(packed, level), _ZLIB])
    return _pack([MAGIC, SCHEMA_VERSION, kind, wire])


def _unpack(data: bytes) -> Any:
    return msgpack.unpackb(data, raw=False, strict_map_key=False, use_list=True)


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
        envelope = _unpack(data)
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
        if envelope[4] != _ZLIB or not isinstance(payload, bytes):
            raise CorruptRecord(path, f"unknown compression {envelope[4]!r}")
        try:
            payload = _unpack(zlib.decompress(payload))
        except Exception as exc:
            raise CorruptRecord(path, f"bad compressed payload: {exc}") from exc
    if not isinstance(payload, list):
        raise CorruptRecord(path, f"{kind} payload is not a list")
    try:
        return cls.from_wire(payload)
    except (IndexError, KeyError, TypeError, ValueError) as exc:
        raise CorruptRecord(path, f"{kind} payload has the wrong shape: {exc}") from exc
