"""Bytes on disk: record types, the codec, atomic writes, layout and generation snapshots.

Readers use ``open_snapshot`` / ``read_current`` / ``Snapshot``; the write side
(``StoreWriter``) lives in ``store.writer`` and is imported from there by the pipeline only,
so that importing this package never pulls the write side into the query process.

The names below are imported on first use (PEP 562): importing ``store.config`` or
``store.errors`` runs this file first, and a client that needs only those (the ``query`` CLI
answered by ``query serve``) would otherwise load the codec, zstd, msgpack and every record
type for nothing (~15 ms of each CLI call).
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from store.codec import decode, encode, kind_of
    from store.errors import (
        CorruptRecord,
        GenerationConflict,
        NotAnIndex,
        SchemaVersionError,
        SnapshotMissing,
        StoreError,
        StoreLocked,
    )
    from store.layout import IndexLayout
    from store.reader import Snapshot, open_snapshot, read_current
    from store.records import SCHEMA_VERSION

__all__ = [
    "SCHEMA_VERSION",
    "CorruptRecord",
    "GenerationConflict",
    "IndexLayout",
    "NotAnIndex",
    "SchemaVersionError",
    "Snapshot",
    "SnapshotMissing",
    "StoreError",
    "StoreLocked",
    "decode",
    "encode",
    "kind_of",
    "open_snapshot",
    "read_current",
]

_HOME = {
    "SCHEMA_VERSION": "store.records",
    "CorruptRecord": "store.errors",
    "GenerationConflict": "store.errors",
    "IndexLayout": "store.layout",
    "NotAnIndex": "store.errors",
    "SchemaVersionError": "store.errors",
    "Snapshot": "store.reader",
    "SnapshotMissing": "store.errors",
    "StoreError": "store.errors",
    "StoreLocked": "store.errors",
    "decode": "store.codec",
    "encode": "store.codec",
    "kind_of": "store.codec",
    "open_snapshot": "store.reader",
    "read_current": "store.reader",
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'store' has no attribute {name!r}")
    value = getattr(import_module(home), name)
    globals()[name] = value
    return value
