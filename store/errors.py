"""Errors raised by the store.

* StoreError
  + CorruptRecord        a record file could not be decoded
  + SchemaVersionError   a record was written by another schema version of this code
  + IndexOutdated        the published index is another format: `pipeline run` re-derives it
                         (``code``: ``index_upgrading`` while one does, else ``index_outdated``)
  + SnapshotMissing      no generation has been published yet: run `pipeline run --once` first
  + StoreLocked          another writer holds the index lock
  + GenerationConflict   a manifest does not follow the current generation (or names missing
                         records): someone else published, or the caller skipped a step
  + NotAnIndex           refusing to wipe a folder that does not look like an index
  + DiskFull             the index folder's file system has no room (also an OSError)
"""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

__all__ = [
    "CorruptRecord",
    "DiskFull",
    "GenerationConflict",
    "IndexOutdated",
    "NotAnIndex",
    "SchemaVersionError",
    "SnapshotMissing",
    "StoreError",
    "StoreLocked",
    "free_bytes",
    "is_disk_full",
]

_FULL: frozenset[int] = frozenset({errno.ENOSPC, errno.EDQUOT})


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
    def __init__(
        self, path: Path | str, found: object, expected: int, what: str = "record schema"
    ) -> None:
        # The index is derived data: `pipeline run` (either mode) notices another format at
        # start and derives it again from the session files and the archive (pipeline.upgrade).
        super().__init__(
            f"{path}: {what} {found!r}, this code reads {expected}; "
            "`pipeline run` derives the index again (by itself, at start)"
        )
        self.path = str(path)
        self.found = found
        self.expected = expected


# The two states a reader names while CURRENT's manifest is another format (README, runbook).
INDEX_UPGRADING = "index_upgrading"
INDEX_OUTDATED = "index_outdated"


class IndexOutdated(StoreError):
    """CURRENT names a generation this build cannot read (another record format): a running
    pipeline is deriving it again (``index_upgrading``), or none is (``index_outdated``)."""

    def __init__(
        self, index_dir: Path | str, detail: str, *, upgrading: bool, message: str | None = None
    ) -> None:
        """*message*: as a query server already worded it (``query.transport``)."""
        self.index_dir = str(index_dir)
        self.code = INDEX_UPGRADING if upgrading else INDEX_OUTDATED
        self.detail = detail
        if message is None and upgrading:
            message = (
                f"{index_dir}: the index is being derived again after an upgrade ({detail}); "
                "answers return when the running pipeline publishes it"
            )
        elif message is None:
            message = (
                f"{index_dir}: the index was written by another sessiondex version ({detail}); "
                "run `pipeline run --once` (or start `pipeline run`) to derive it again"
            )
        super().__init__(message)


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


class DiskFull(StoreError, OSError):
    """No room left where the index is written. Nothing already published is lost: records
    are written beside the generation readers use, and CURRENT moves only after them."""

    def __init__(self, index_dir: Path | str) -> None:
        self.index_dir = str(index_dir)
        self.free = free_bytes(index_dir)
        where = f"{self.free:,} bytes free" if self.free is not None else "free space unknown"
        super().__init__(
            errno.ENOSPC,
            f"no space left for the index in {index_dir} ({where}); nothing was lost: the "
            "last published generation still answers. Free some space and indexing resumes "
            "(`pipeline run` by itself; `pipeline run --once` when run again)",
        )

    def __str__(self) -> str:
        return str(self.strerror)


def free_bytes(folder: Path | str) -> int | None:
    """Bytes an unprivileged writer may still use on *folder*'s file system (its nearest
    existing ancestor's), or None when it cannot be told."""
    path = os.path.abspath(folder)
    while not os.path.isdir(path) and os.path.dirname(path) != path:
        path = os.path.dirname(path)
    try:
        return shutil.disk_usage(path).free
    except OSError:
        return None


def is_disk_full(exc: BaseException | None) -> bool:
    """True when *exc*, or an exception it was raised from, says the disk or quota is full."""
    seen = 0
    while exc is not None and seen < 16:
        if isinstance(exc, OSError) and exc.errno in _FULL:
            return True
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return False
