"""Classify a change to one session file against what the journal last said about it.

::

    stat (no open: our own reads must not look like changes)
      gone, or not a regular file ─────────────────────────────► delete (if known)
      same stamp ──────────────────────────────────────────────► nothing
      unknown, new inode, shrunk ──────────────────────────────► rewrite (hash it whole)
        (unknown, in a catch-up: the stat alone; its worker hashes what it reads)
      same size, new stamp: whole hash equal ──────────────────► append of nothing (new stamp)
                                       differs ────────────────► rewrite
      grown: prefix unchanged? ── yes ─► read only the new bytes ► append [old size, new size)
                               └─ no ──────────────────────────► rewrite

A session inside a database file (``store.dbsource``) has no bytes of its own to append to:
its stamp is read from inside the database, and when it moved the session is serialized and
hashed whole: the same hash is an append of nothing (a new stamp), another a rewrite. A
session of an older writer's tree of files that the database beside it now holds (migrated,
``store.dbtree``) is forgotten, not deleted: the archive must not keep a second copy of it.

"Prefix unchanged" is proved by hashing the whole known prefix against the recorded hash the
first time a file grows after a start or a reconcile scan; until the next scan this watcher
keeps a running hasher and the first and last 4 KiB of the prefix, and re-reads only those two
windows (an in-place rewrite that keeps the inode, grows the file and leaves both windows
alone is therefore found at the next scan, not at once). Every event carries the blake3 of
the bytes it covers, so a worker can prove it read the same bytes.
"""

from __future__ import annotations

import os
import stat as stat_module
from dataclasses import dataclass
from typing import Any, Final

import blake3

from store.dblayout import DbLayout, same_stamp, split_member
from store.dbsource import (
    DbUnreadable,
    MemberTooLarge,
    is_superseded,
    member_stamp,
    read_member,
)
from store.records import SourceEvent

__all__ = ["WINDOW", "Known", "classify", "classify_member", "known_from_event"]

WINDOW: Final = 4096
_CHUNK: Final = 1 << 20


@dataclass(slots=True)
class Known:
    """What the journal last said about a file; ``hasher`` etc. only if this process read it."""

    agent: str
    dev: int
    inode: int
    size: int
    mtime_ns: int
    ctime_ns: int
    hash: str | None
    hasher: Any = None  # blake3.blake3 over [0, size)
    head: bytes = b""
    tail: bytes = b""

    @property
    def stamp(self) -> tuple[int, int, int, int, int]:
        return (self.dev, self.inode, self.size, self.mtime_ns, self.ctime_ns)

    def forget_reads(self) -> None:
        """Trust only the recorded hash again (the next growth re-proves the whole prefix)."""
        self.hasher = None
        self.head = self.tail = b""


def known_from_event(event: SourceEvent) -> Known | None:
    """The file as an already journaled event describes it (None after a delete)."""
    if event.kind in ("delete", "forget"):
        return None
    ctime = event.extra.get("ctime_ns")
    digest = event.extra.get("hash")
    return Known(
        agent=event.agent,
        dev=event.dev,
        inode=event.inode,
        size=event.end,
        mtime_ns=event.mtime_ns,
        ctime_ns=ctime if isinstance(ctime, int) else 0,
        hash=digest if isinstance(digest, str) else None,
    )


def classify(
    path: str,
    agent: str,
    known: Known | None,
    now_ns: int,
    limit: int | None = None,
    *,
    hash_new: bool = True,
) -> tuple[SourceEvent | None, Known | None]:
    """The event this file's current state makes (None: nothing new) and what is known after.

    A file larger than *limit* (``[sources] maxFileBytes``) is not hashed: the worker will not
    read it either (``oversized_file``), and hashing a 1 GiB sparse file alone took 8 s.

    Without *hash_new*, a file nothing was known of is not read either: its rewrite event
    carries no hash (as an unreadable file's does). A catch-up asks for that: its worker builds
    every changed session whole and reads and hashes the file itself, so the watcher's hash of
    a new file would only be compared by a later event of the same process, and there is
    none (a from-empty build hashed all of its sources twice, serially first). What is known
    is still hashed: its hash tells a touched file (a restamp) from a rewrite."""
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        st = None
    if st is None or not stat_module.S_ISREG(st.st_mode):
        if known is None:
            return None, None
        return _delete(path, known, now_ns), None
    if known is not None and known.stamp == _stamp(st) and known.agent == agent:
        return None, known
    if (limit is not None and st.st_size > limit) or (known is None and not hash_new):
        after = Known(agent, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, None)
        return _event("rewrite", path, after, 0, now_ns), after
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | os.O_CLOEXEC)
    except OSError:
        # Unreadable: the worker records it as source_unavailable.
        after = Known(agent, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, None)
        return _event("rewrite", path, after, 0, now_ns), after
    try:
        return _classify_open(path, agent, known, fd, now_ns)
    finally:
        os.close(fd)


def classify_member(
    path: str,
    agent: str,
    known: Known | None,
    now_ns: int,
    layout: DbLayout,
    limit: int | None = None,
) -> tuple[SourceEvent | None, Known | None]:
    """``classify`` for a session inside a database file (module docstring). A database that
    cannot be read changes nothing known (the reconcile scan names it unreadable)."""
    where = split_member(path)
    try:
        stamp = member_stamp(*where, layout) if where is not None else None
    except FileNotFoundError:
        stamp = None
    except DbUnreadable:
        return None, known
    if stamp is None or where is None:
        return (_gone(path, known, now_ns, layout) if known is not None else None), None
    if known is not None and known.agent == agent and same_stamp(known.stamp, stamp):
        return None, known
    dev, ino, _, mtime_ns, signature = stamp
    try:
        data, stamp = read_member(*where, layout, limit)
    except MemberTooLarge:
        # not hashed: the worker will not read it either (``oversized_file``)
        after = Known(agent, dev, ino, (limit or 0) + 1, mtime_ns, signature, None)
        return _event("rewrite", path, after, 0, now_ns), after
    except FileNotFoundError:
        return (_gone(path, known, now_ns, layout) if known is not None else None), None
    except DbUnreadable:
        return None, known
    dev, ino, size, mtime_ns, signature = stamp
    after = Known(agent, dev, ino, size, mtime_ns, signature, blake3.blake3(data).hexdigest())
    if known is not None and known.agent == agent and known.hash == after.hash:
        return _event("append", path, after, size, now_ns), after
    return _event("rewrite", path, after, 0, now_ns), after


def _classify_open(
    path: str, agent: str, known: Known | None, fd: int, now_ns: int
) -> tuple[SourceEvent | None, Known | None]:
    st = os.fstat(fd)
    if (
        known is None
        or known.hash is None
        or known.agent != agent
        or (known.dev, known.inode) != (st.st_dev, st.st_ino)
        or st.st_size < known.size
    ):
        return _rewrite(path, agent, fd, st, now_ns)
    if st.st_size == known.size:
        after = _read_known(agent, fd, st, st.st_size)
        if after.hash != known.hash or after.size != known.size:
            return _rewrite(path, agent, fd, st, now_ns)
        return _event("append", path, after, known.size, now_ns), after
    if known.hasher is None:
        proved = _read_known(agent, fd, st, known.size)
        if proved.hash != known.hash or proved.size != known.size:
            return _rewrite(path, agent, fd, st, now_ns)
        known = proved
    elif not _windows_hold(fd, known):
        return _rewrite(path, agent, fd, st, now_ns)
    hasher = known.hasher.copy()
    head, tail = known.head, known.tail
    offset = known.size
    while offset < st.st_size:
        chunk = os.pread(fd, min(_CHUNK, st.st_size - offset), offset)
        if not chunk:
            break
        hasher.update(chunk)
        if len(head) < WINDOW:
            head = (head + chunk)[:WINDOW]
        tail = (tail + chunk)[-WINDOW:]
        offset += len(chunk)
    after = Known(
        agent, st.st_dev, st.st_ino, offset, st.st_mtime_ns, st.st_ctime_ns,
        hasher.hexdigest(), hasher, head, tail,
    )  # fmt: skip
    return _event("append", path, after, known.size, now_ns), after


def _rewrite(
    path: str, agent: str, fd: int, st: os.stat_result, now_ns: int
) -> tuple[SourceEvent, Known]:
    after = _read_known(agent, fd, st, st.st_size)
    return _event("rewrite", path, after, 0, now_ns), after


def _read_known(agent: str, fd: int, st: os.stat_result, size: int) -> Known:
    """Hash [0, size) of *fd*, keeping the running hasher and both windows."""
    hasher = blake3.blake3()
    head = tail = b""
    offset = 0
    while offset < size:
        chunk = os.pread(fd, min(_CHUNK, size - offset), offset)
        if not chunk:
            break  # shrank while reading: the bytes read are what the event describes
        hasher.update(chunk)
        if len(head) < WINDOW:
            head = (head + chunk)[:WINDOW]
        tail = (tail + chunk)[-WINDOW:]
        offset += len(chunk)
    return Known(
        agent, st.st_dev, st.st_ino, offset, st.st_mtime_ns, st.st_ctime_ns,
        hasher.hexdigest(), hasher, head, tail,
    )  # fmt: skip


def _windows_hold(fd: int, known: Known) -> bool:
    """The first and last bytes of the known prefix are still what this watcher read."""
    if os.pread(fd, len(known.head), 0) != known.head:
        return False
    start = known.size - len(known.tail)
    return os.pread(fd, len(known.tail), start) == known.tail


def _stamp(st: os.stat_result) -> tuple[int, int, int, int, int]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _event(kind: str, path: str, after: Known, start: int, now_ns: int) -> SourceEvent:
    extra: dict[str, Any] = {"ctime_ns": after.ctime_ns}
    if after.hash is not None:
        extra["hash"] = after.hash
    return SourceEvent(
        kind=kind,
        path=path,
        agent=after.agent,
        dev=after.dev,
        inode=after.inode,
        size=after.size,
        mtime_ns=after.mtime_ns,
        start=start,
        end=after.size,
        observed_ns=now_ns,
        extra=extra,
    )


def _gone(path: str, known: Known, now_ns: int, layout: DbLayout) -> SourceEvent:
    """A member no longer there: deleted (the archive may keep it), or, for a session of a
    tree the writer migrated into its database (``store.dbtree``), forgotten: the database
    holds it now, and a kept copy would answer every query twice."""
    if is_superseded(path, layout):
        return SourceEvent("forget", path, known.agent, 0, 0, 0, 0, 0, 0, now_ns)
    return _delete(path, known, now_ns)


def _delete(path: str, known: Known, now_ns: int) -> SourceEvent:
    return SourceEvent(
        kind="delete",
        path=path,
        agent=known.agent,
        dev=known.dev,
        inode=known.inode,
        size=0,
        mtime_ns=known.mtime_ns,
        start=0,
        end=0,
        observed_ns=now_ns,
    )
