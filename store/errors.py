"""Errors raised by the store.

* StoreError
  + CorruptRecord        a record file could not be decoded
  + SchemaVersionError   a record was written by another schema version of this code
  + SnapshotMissing      no generation has been published yet: run `pipeline run --once` first
  + StoreLocked          another writer holds the index lock
  + GenerationConflict   a manifest does not follow the current generation (or names missing
                         records): someone else published, or the caller skipped a step
  + NotAnIndex           refusing to wipe a folder that does not look like an index
"""

from __future__ import annotations

from pathlib import Path

__all__ = [
    "CorruptRecord",
    "GenerationConflict",
    "NotAnIndex",
    "SchemaVersionError",
    "SnapshotMissing",
    "StoreError",
    "StoreLocked",
]


class StoreError(Exception):
    """Base class for everything the store raises."""


class CorruptRecord(StoreError, ValueError):
    def __init__(self, path: Path | str, reason: str) -> None:
        super().__init__(
            f"{path}: cannot decode record ({reason}); rebuild with `pipeline rebuild`"
        )
        self.path = str(path)
        self.reason = reason


class SchemaVersionError(StoreError):
    def __init__(self, path: Path | str, found: object, expected: int) -> None:
        super().__init__(
            f"{path}: record schema {found!r}, this code reads {expected}; "
            "run `pipeline rebuild` to rebuild the index"
        )
        self.path = str(path)


class SnapshotMissing(StoreError, FileNotFoundError):
    def __init__(self, index_dir: Path | str) -> None:
        super().__init__(
            f"no index generation in {index_dir}: run `pipeline run --once` to build one"
        )
        self.index_dir = str(index_dir)


class StoreLocked(StoreError):
    def __init__(self, index_dir: Path | str) -> None:
        super().__init__(
            f"{index_dir} is locked by another writer (is `pipeline run` already running?); "
            "stop it first or wait for it to finish"
        )
        self.index_dir = str(index_dir)


class GenerationConflict(StoreError):
    def __init__(self, index_dir: Path | str, reason: str) -> None:
        super().__init__(f"{index_dir}: cannot publish ({reason})")
        self.index_dir = str(index_dir)
        self.reason = reason


class NotAnIndex(StoreError):
    def __init__(self, index_dir: Path | str) -> None:
        super().__init__(
            f"{index_dir} is not empty and does not look like a sessiondex index "
            "(no CURRENT, manifests/, records/ or journal/); refusing to delete anything in it"
        )
        self.index_dir = str(index_dir)
