"""Is the indexed session still the file on disk?

The indexer records the stamp ``(dev, inode, size, mtime_ns, ctime_ns)`` of the descriptor it
read. An equal stamp proves the bytes are unchanged (an in-place rewrite always moves ctime).
A moved stamp with the same size may still be the same bytes (a ``touch``, a ``chmod``), so
then — and only then — the file is hashed and compared with ``source_hash``; a different
size is a change without reading anything. Hash verdicts are remembered per stamp, so a
long-running process hashes a touched file once.

With a change feed (``query.changes``, a long-lived engine on Linux) a verdict is also kept per
path and SessionState: the folder's watch is added before the ``stat`` that makes the verdict,
and the verdict stands until a drained batch names the path, its folder or an ancestor (or
overflows). A request then stats only what may have changed. A state that is not the very
object the verdict was made for (a new generation indexed the file again) is observed afresh,
and so is a file with several hard links, or one in a folder the feed cannot watch.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Final, Literal

import blake3

from query.changes import Batch, Changes
from store.archive import Archive
from store.dblayout import DbLayout, Stamp, same_stamp, split_member
from store.dbsource import QUERY_BUSY_MS, list_members, member_stamp, read_member
from store.errors import CorruptRecord
from store.records import SessionState

__all__ = ["Freshness", "Observation", "Status"]

Status = Literal["fresh", "changed", "missing", "unreadable"]
_CACHE_MAX: Final = 4096
# how long a database that could not be listed is taken as unreadable without trying again
_UNREADABLE_RETRY_S: Final = 1.0
_CHUNK: Final = 1 << 20


@dataclass(frozen=True, slots=True)
class Observation:
    status: Status
    # blake3 of the live file, when it had to be (or was asked to be) computed
    actual_hash: str | None = None

    @property
    def fresh(self) -> bool:
        return self.status == "fresh"


def _database_key(db: str) -> object:
    """What a database's files look like now: a commit moves the file or its log (a new
    size, time or inode), a checkpoint that restarts the log its header's salts."""
    key: list[object] = []
    for path in (db, f"{db}-wal"):
        try:
            st = os.stat(path)
        except OSError:
            key.append(None)
            continue
        key.append((st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
    try:
        with open(f"{db}-wal", "rb") as f:
            key.append(f.read(32))
    except OSError:
        key.append(None)
    return tuple(key)


def _hash_file(path: str) -> str:
    h = blake3.blake3()
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    try:
        while True:
            chunk = os.read(fd, _CHUNK)
            if not chunk:
                break
            h.update(chunk)
    finally:
        os.close(fd)
    return h.hexdigest()


class Freshness:
    """Observes session files for one process; safe to share across requests (not threads).

    ``changes``: the process's change feed, or None to stat on every observation. With a
    feed, the owner calls ``sync`` with each drained batch before a request observes anything.
    """

    def __init__(self, changes: Changes | None = None, archive: Archive | None = None) -> None:
        # where sessions whose source is gone are kept: their bindings are its chains' hashes
        self.archive = archive
        self._verdicts: dict[tuple[str, int, int, int, int, int], str] = {}
        self._changes = changes
        # path -> (the state the verdict is for, the verdict); only while the feed vouches
        self._trusted: dict[str, tuple[SessionState, Observation]] = {}
        self._by_folder: dict[str, set[str]] = {}
        # A clock for memos of whole scopes (``memo``/``remember``): it ticks whenever a verdict
        # is voided or an observation is not vouched for, and ``_moved`` says at which tick
        # each path last did. A memo made at tick E is brought up to date by observing again
        # just the paths that moved after E; before ``_floor`` nothing is known.
        self.epoch = 0
        self._moved: dict[str, int] = {}
        self._floor = 0
        self._memo: dict[int, tuple[object, int, object]] = {}
        # agent -> how its sessions are read from a database file (the manifest's sources)
        self.databases: dict[str, DbLayout] = {}
        # database -> (what its files looked like, its members' stamps then)
        # (None: it could not be read at that monotonic time)
        self._listings: dict[str, tuple[object, dict[str, Stamp] | None, float]] = {}

    @property
    def changes(self) -> Changes | None:
        return self._changes

    def sync(self, batch: Batch) -> None:
        """Void every verdict *batch* names (all of them on overflow)."""
        if batch.overflow:
            self._trusted.clear()
            self._by_folder.clear()
            self._memo.clear()
            self._moved.clear()
            self.epoch += 1
            self._floor = self.epoch
            return
        voided: list[str] = []
        for folder in batch.folders:
            for path in self._by_folder.pop(folder, ()):
                if self._trusted.pop(path, None) is not None:
                    voided.append(path)
        for path in batch.paths:
            if self._trusted.pop(path, None) is not None:
                voided.append(path)
                self._by_folder.get(os.path.dirname(path), set()).discard(path)
        if voided:
            self.epoch += 1
            for path in voided:
                self._move(path)

    def _move(self, path: str) -> None:
        if len(self._moved) >= _CACHE_MAX:
            self._moved.clear()
            self._floor = self.epoch
        self._moved[path] = self.epoch

    def memo(self, key: object) -> tuple[object, frozenset[str]] | None:
        """The value ``remember``-ed for *key* (by identity), and the paths that moved since.

        The caller observes those paths again and keeps the value if nothing it depends on
        changed; None when there is no value, or the moves since cannot be known.
        """
        found = self._memo.get(id(key))
        if found is None or found[0] is not key or found[1] < self._floor:
            return None
        since = found[1]
        if since == self.epoch:
            return found[2], frozenset()
        return found[2], frozenset(p for p, e in self._moved.items() if e > since)

    def remember(self, key: object, epoch: int, value: object) -> None:
        """Keep *value* for *key*, observed from tick *epoch* on (read it before observing)."""
        if self._changes is None or epoch < self._floor:
            return
        if len(self._memo) >= 8 and id(key) not in self._memo:
            self._memo.clear()
        self._memo[id(key)] = (key, epoch, value)

    def observe(self, state: SessionState, *, need_hash: bool = False) -> Observation:
        """Compare the live file with *state*; ``need_hash`` also reports a changed file's hash."""
        if state.archived:
            return self._kept(state)
        changes = self._changes
        if changes is None:
            return self._look(state, need_hash)[0]
        path = state.path
        hit = self._trusted.get(path)
        if hit is not None and hit[0] is state:
            o = hit[1]
            if not need_hash or o.status != "changed" or o.actual_hash is not None:
                return o
        folder = os.path.dirname(path)
        vouched = changes.watch(folder)  # before the stat: a change after it is an event
        o, links = self._look(state, need_hash)
        # unreadable may be passing (EMFILE, EIO): never kept
        if vouched and links <= 1 and o.status != "unreadable":
            self._trusted[path] = (state, o)
            self._by_folder.setdefault(folder, set()).add(path)
        else:
            self._trusted.pop(path, None)
            self.epoch += 1
            self._move(path)
        return o

    def _look_member(self, state: SessionState, layout: DbLayout, need_hash: bool) -> Observation:
        """A session inside a database file: its stamp from inside the database, and when
        that moved, the hash of its rows serialized again (``store.dbsource``). A look that
        needs no hash (a recall's verdicts) takes the stamp from one listing of the database
        per change of its files; one that does (``expand``, a follow token) reads it alone."""
        where = split_member(state.path)
        if where is None:
            return Observation("missing")
        try:
            # a tree of session files (``store.dbtree``) is stamped per session: no file of
            # its own moves when one of its sessions grows, so no listing of it is kept
            tree = layout.tree(os.path.basename(where[0])) is not None
            if need_hash or tree:
                stamp = member_stamp(*where, layout, busy_ms=QUERY_BUSY_MS)
            else:
                listed = self._listing(where[0], layout)
                if listed is None:
                    # the database cannot be read now (locked by a writer, damaged): one
                    # failed listing answers for all its sessions, each no second wait
                    return Observation("unreadable")
                stamp = listed.get(where[1])
            if stamp is None:
                return Observation("missing")
            if same_stamp(stamp, state.stamp):
                return Observation("fresh", state.source_hash)
            if not need_hash:
                return Observation("changed")
            data, _ = read_member(*where, layout, busy_ms=QUERY_BUSY_MS)
        except FileNotFoundError:
            return Observation("missing")
        except OSError:
            return Observation("unreadable")
        actual = blake3.blake3(data).hexdigest()
        return Observation("fresh" if actual == state.source_hash else "changed", actual)

    def _listing(self, db: str, layout: DbLayout) -> dict[str, Stamp] | None:
        """Every member's stamp in *db*, listed again only when the file, its write-ahead log
        or the log's header (a checkpoint's new salts) moved; None when it cannot be read."""
        key = _database_key(db)
        now = time.monotonic()
        found = self._listings.get(db)
        if (
            found is not None
            and found[0] == key
            and (found[1] is not None or now - found[2] < _UNREADABLE_RETRY_S)
        ):
            return found[1]
        try:
            listed: dict[str, Stamp] | None = list_members(db, layout, busy_ms=QUERY_BUSY_MS)
        except FileNotFoundError:
            return {}  # gone: every member missing
        except OSError:
            # remembered a moment: a database locked by a writer costs each look of one of
            # its sessions the busy wait otherwise (a recall over many: many waits)
            listed, now = None, time.monotonic()
        if len(self._listings) >= _CACHE_MAX:
            self._listings.clear()
        self._listings[db] = (key, listed, now)
        return listed

    def _kept(self, state: SessionState) -> Observation:
        """A session read from the archive is current while its chain holds exactly the
        bytes it was indexed from (the chain's blake3 is then its source hash): follow
        tokens verify against the kept copy, as they do against a live file."""
        if self.archive is None:
            return Observation("missing")
        try:
            chain = self.archive.head(state.path)
        except (CorruptRecord, OSError):
            return Observation("unreadable")
        if chain is None or chain.key != state.path:
            return Observation("missing")  # forgotten meanwhile
        if (chain.length, chain.hash) == (state.size, state.source_hash):
            return Observation("fresh", chain.hash)
        return Observation("changed", chain.hash)

    def _look(self, state: SessionState, need_hash: bool) -> tuple[Observation, int]:
        """The observation, and the file's link count (0 when it could not be stat-ed)."""
        layout = self.databases.get(state.agent)
        if layout is not None:
            return self._look_member(
                state, layout, need_hash
            ), 2  # never trusted on a folder's word
        try:
            st = os.stat(state.path, follow_symlinks=False)
        except FileNotFoundError:
            return Observation("missing"), 0
        except OSError:
            return Observation("unreadable"), 0
        links = st.st_nlink
        stamp = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        if stamp == state.stamp:
            return Observation("fresh", state.source_hash), links
        if st.st_size != state.size and not need_hash:
            return Observation("changed"), links
        key = (state.path, *stamp)
        actual = self._verdicts.get(key)
        if actual is None:
            try:
                actual = _hash_file(state.path)
            except OSError:
                return Observation("unreadable"), links
            if len(self._verdicts) >= _CACHE_MAX:
                self._verdicts.clear()
            self._verdicts[key] = actual
        if actual == state.source_hash:
            return Observation("fresh", actual), links
        return Observation("changed", actual), links
