"""Bytes on disk: record types, the codec, atomic writes, layout and generation snapshots.

Readers use ``open_snapshot`` / ``read_current`` / ``Snapshot``; the write side
(``StoreWriter``) lives in ``store.writer`` and is imported from there by the pipeline only,
so that importing this package never pulls the write side into the query process.
"""

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
