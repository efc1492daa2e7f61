"""The pipeline's side of the archive: what a build keeps, and building from what was kept.

::

    whole build from the live file ─► keep_whole: the chain extends, or a new chain starts
        (the old one kept as a ``retired_key`` session when entries it held are gone)
    append ─► keep_append (one segment) ─► SessionState.archive = kept | archive_full
    source gone ─► the chain proves the indexed bytes ─► the state, now ``archived`` (cold)
                └─ otherwise ─► a whole build from the chain's bytes (``from_archive``)

Every process that builds sessions (a pool worker of ``run --once``, an index worker of
``pipeline run``) holds one ``ArchiveWriter`` per archive folder, made on first use from the
job's ``ArchiveSettings`` (a plain, picklable value).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import blake3

from store.archive import Chain, path_hash, source_of
from store.archive_writer import ArchiveWriter
from store.config import Config
from store.errors import CorruptRecord
from store.records import NormalizedEntry

__all__ = [
    "ArchiveSettings",
    "begins_with",
    "archive_of",
    "content_lost",
    "hashes",
    "keeper",
    "usable",
]


@dataclass(frozen=True, slots=True)
class ArchiveSettings:
    """Where the archive is and how big it may grow (``[archive]`` with ``keep = true``)."""

    dir: str
    max_bytes: int


def archive_of(config: Config) -> ArchiveSettings | None:
    """The archive the pipeline keeps, or None with ``[archive] keep = false``."""
    if not config.archive.keep:
        return None
    return ArchiveSettings(str(config.archive_dir), config.archive.max_bytes)


_WRITERS: dict[ArchiveSettings, ArchiveWriter] = {}


def keeper(settings: ArchiveSettings | None) -> ArchiveWriter | None:
    """This process's writer of the archive *settings* names (None: keep is off)."""
    if settings is None:
        return None
    found = _WRITERS.get(settings)
    if found is None:
        found = _WRITERS[settings] = ArchiveWriter(Path(settings.dir), max_bytes=settings.max_bytes)
    return found


def usable(chain: Chain | None, key: str) -> bool:
    """A chain a session can be read from: it is the one of *key* and holds some bytes."""
    return chain is not None and chain.key == key and chain.length > 0


def hashes(data: bytes, at: int) -> tuple[str, Callable[[int], str]]:
    """The blake3 of *data* and a function giving the blake3 of a prefix of it, the prefix
    of *at* bytes hashed on the way (one pass over the bytes where two would be needed)."""
    hasher = blake3.blake3()
    view = memoryview(data)
    prefix: str | None = None
    if 0 < at <= len(data):
        hasher.update(view[:at])
        prefix = hasher.copy().hexdigest()
        hasher.update(view[at:])
    else:
        hasher.update(view)
    full = hasher.hexdigest()

    def prefix_hash(n: int) -> str:
        if n == at and prefix is not None:
            return prefix
        if n == len(data):
            return full
        return blake3.blake3(view[:n]).hexdigest()

    return full, prefix_hash


def _content(entries: Iterable[NormalizedEntry]) -> Counter[tuple[object, ...]]:
    return Counter((e.type, e.role, e.tool, e.text) for e in entries)


def content_lost(old: Iterable[NormalizedEntry], new: Iterable[NormalizedEntry]) -> bool:
    """True when an entry of the old version (type, role, tool and complete text) is not in
    the new one: the rewrite lost conversation, so the old version is kept on its own. A
    rewrite that keeps every entry (Pi's format migrations, a Codex rollout saved whole
    again) only replaces the chain."""
    return bool(_content(old) - _content(new))


def is_forgotten(tombstones: frozenset[str], key: str) -> bool:
    """True when *key* (or the source a retired version came from) was forgotten."""
    if not tombstones:
        return False
    return path_hash(key) in tombstones or path_hash(source_of(key)) in tombstones


def begins_with(path: str, size: int, source_hash: str) -> bool:
    """True when the file at *path* starts with the *size* bytes hashing to *source_hash*:
    a session file moved (renamed) there, not a new one that reuses a freed inode."""
    hasher = blake3.blake3()
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        offset = 0
        while offset < size:
            chunk = os.pread(fd, min(1 << 20, size - offset), offset)
            if not chunk:
                return False
            hasher.update(chunk)
            offset += len(chunk)
    except OSError:
        return False
    finally:
        os.close(fd)
    return hasher.hexdigest() == source_hash


def read_chain(writer: ArchiveWriter, key: str) -> tuple[Chain, bytes] | None:
    """The chain of *key* and its proven bytes, or None when there is none to read."""
    try:
        chain = writer.reader.head(key)
    except CorruptRecord:
        return None
    if chain is None or not usable(chain, key):
        return None
    try:
        return chain, writer.reader.read(chain)
    except Exception:  # a damaged copy is no copy: the caller drops the session
        return None
