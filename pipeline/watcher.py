"""The watcher: notice every change under the roots and journal it; never index anything.

::

    watchdog observer thread ─► mark(path) ─┐
    reconcile scan (start, every reconcile_s, on demand) ─► mark(paths) ─┤
                                                                         ▼
    loop_once: dirty paths ─► classify (pipeline.classify) ─► journal.append (one fsync)

``mark`` only adds to a set, so a burst of writes to one file between two ticks becomes one
event, and the observer's own queue never waits on disk. When the workers fall more than
``max_pending_events`` behind, the watcher stops journaling and lets dirty paths pile up in
that set (bounded by the number of files): backpressure by coalescing, nothing dropped. The
reconcile scan compares every file's stamp with what was journaled, so changes made while the
pipeline was down, or events the OS dropped (inotify overflow), are still found.

At start the watcher's view is the published manifest plus the journal events after the
publish checkpoint: exactly what the journal has already said about each file.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

import structlog
from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver

from pipeline.archiving import archive_of, begins_with
from pipeline.classify import Known, classify, classify_member, known_from_event
from pipeline.discovery import discover, is_session, unchanged, under
from pipeline.engine import UNREADABLE
from pipeline.keepout import KeepOut
from pipeline.resume import resume_after, usable_manifest
from pipeline.settings import RunSettings
from stages.agents import adapter
from store.archive import key_name
from store.config import Config
from store.dblayout import MEMBER, member_path, same_stamp
from store.dbsource import DbUnreadable, list_members
from store.dbtree import session_of
from store.errors import CorruptRecord
from store.journal import Journal
from store.reasons import SOURCE_UNREADABLE
from store.records import SourceEvent

__all__ = ["Observers", "Watcher", "WatcherStats"]

log = structlog.get_logger()

_UNSEEN = object()


@dataclass(frozen=True, slots=True)
class WatcherStats:
    head: int
    known: int
    dirty: int
    journaled: int
    reconciles: int
    journal_bytes: int
    held_back: bool


class Watcher:
    """Classifies dirty paths into journal events; see the module docstring."""

    def __init__(
        self,
        config: Config,
        journal: Journal,
        *,
        policy: str,
        published: Callable[[], int],
        settings: RunSettings,
        clock: Callable[[], float] = time.monotonic,
        now_ns: Callable[[], int] = time.time_ns,
        hash_new: bool = True,
    ) -> None:
        """*hash_new*: hash the files nothing is known of (``pipeline.classify.classify``);
        a catch-up, which builds each of them whole, does not."""
        self.config = config
        self.hash_new = hash_new
        self.journal = journal
        self.policy = policy
        self.published = published
        self.settings = settings
        self.clock = clock
        self.now_ns = now_ns
        self.view: dict[str, Known] = {}
        self.journaled = 0
        self.reconciles = 0
        self._lock = threading.Lock()
        # set by the observer side: the loop's idle pause ends at once instead of on its timer
        self.changed = threading.Event()
        self._dirty: set[str] = set()
        self._rescan = True
        self._next_scan = 0.0
        self._held_back = False
        self._roots = sorted(
            ((str(root), agent) for agent, root in config.roots.items()),
            key=lambda r: -len(r[0]),
        )
        self.keep_out = KeepOut(config)
        self.keeps = archive_of(config) is not None
        # sessions whose source is gone (kept from the archive, or dropped): no file to watch,
        # but a forget or an exclusion still has to reach them; path -> agent
        self.archived: dict[str, str] = {}
        self._tombstones: object = _UNSEEN
        self._first_scan = True
        self._sizes: dict[str, tuple[int, str]] = {}
        # tree files name their owner's id only: (level, id) -> owner id (store.dbtree)
        self._owners: dict[tuple[int, str], str] = {}

    # -- start -----------------------------------------------------------------------------

    def boot(self) -> None:
        """Load what the journal has said so far; the first loop reconciles with the disk."""
        manifest = usable_manifest(self.config.index_dir, self.policy)
        view: dict[str, Known] = {}
        if manifest is not None:
            for s in manifest.sessions:
                if s.archived:
                    self.archived[s.path] = s.agent
                    continue
                view[s.path] = Known(
                    s.agent, s.dev, s.inode, s.size, s.mtime_ns, s.ctime_ns, s.source_hash
                )
            for k in manifest.skipped:
                # Known but never read: the first scan retries it, or reports it gone.
                view[k.path] = Known(k.agent, -1, -1, -1, -1, -1, None)
        for event in _all_after(self.journal, resume_after(self.config.index_dir, self.journal)):
            known = known_from_event(event)
            if known is None:
                view.pop(event.path, None)
                if event.kind == "delete":
                    self.archived[event.path] = event.agent
                else:
                    self.archived.pop(event.path, None)
            else:
                view[event.path] = known
                self.archived.pop(event.path, None)
        self.view = view
        self._rescan = True
        self._tombstones = _UNSEEN  # the first loop looks for what is to be forgotten

    # -- the observer side (any thread) ----------------------------------------------------

    def mark(self, path: str) -> None:
        with self._lock:
            self._dirty.add(path)
        self.changed.set()

    def request_reconcile(self) -> None:
        with self._lock:
            self._rescan = True
        self.changed.set()

    # -- the loop --------------------------------------------------------------------------

    def loop_once(self, now: float) -> bool:
        """Journal what changed since the last call; True when it journaled something."""
        self.changed.clear()  # a mark from now on wakes the next pause
        forgotten = self._forget_blocked()
        if self._rescan or now >= self._next_scan:
            self.reconcile(now)
        backlog = self.journal.head() - self.published()
        self._held_back = backlog > self.settings.max_pending_events
        if self._held_back:
            return forgotten
        with self._lock:
            if not self._dirty:
                return forgotten
            paths = sorted(self._dirty)[: self.settings.classify_batch]
            self._dirty.difference_update(paths)
        paths = self._members_of(paths)
        events: list[SourceEvent] = []
        now_ns = self.now_ns()
        self._sizes = {}
        for path in paths:
            known = self.view.get(path)
            if known is not None and known.hash is not None:
                self._sizes[path] = (known.size, known.hash)
            agent = self.agent_of(path)
            if known is not None and self.keep_out.blocks(path):
                # excluded or forgotten while indexed: purged from the index and the archive
                events.append(_forget(path, known.agent, now_ns))
                self.view.pop(path, None)
                continue
            if known is None and self.keep_out.blocks(path):
                continue
            if agent is None:  # not (or no longer) a session file discovery would list
                event = _gone(path, known, now_ns) if known is not None else None
                after = None
            elif (layout := adapter(agent).database) is not None:
                limit = self.config.max_file_bytes
                event, after = classify_member(path, agent, known, now_ns, layout, limit)
            else:
                limit = self.config.max_file_bytes
                event, after = classify(path, agent, known, now_ns, limit, hash_new=self.hash_new)
            if after is None:
                self.view.pop(path, None)
            else:
                self.view[path] = after
                self.archived.pop(path, None)
            if event is not None:
                if event.kind == "delete":
                    self.archived[path] = event.agent  # the archive may keep it
                events.append(event)
        if events and self.keeps:
            events = self._moves(events)
        if events:
            placed = self.journal.append(events)
            self.journaled += len(placed)
            log.info(
                "journal.appended",
                events=len(placed),
                first=placed[0].position,
                last=placed[-1].position,
            )
        return bool(events) or bool(paths)

    def reconcile(self, now: float) -> None:
        """Compare every file under the roots with the view; mark what differs."""
        with self._lock:
            self._rescan = False
        self._next_scan = now + self.settings.reconcile_s
        candidates, problems = discover(self.config.roots)
        candidates = self.keep_out.keep(candidates)
        unreadable = [p for p, _, reason in problems if reason == SOURCE_UNREADABLE]
        if self._first_scan:
            self._first_scan = False
            self._unknown_chains(candidates)
        seen: set[str] = set(unreadable)  # a folder named skipped stays while it is so
        changed: list[str] = []
        for c in candidates:
            seen.add(c.path)
            known = self.view.get(c.path)
            if (
                known is None
                or known.agent != c.agent
                or not unchanged(c.agent, known.stamp, c.stamp)
            ):
                changed.append(c.path)
        self._unreadable(problems)
        # A file in a folder that cannot be listed is not known to be gone.
        changed += [p for p in self.view if p not in seen and not under(unreadable, p)]
        for known in self.view.values():
            known.forget_reads()  # the windows are trusted for one scan interval at most
        with self._lock:
            self._dirty.update(changed)
        self.reconciles += 1
        # Only what the durable checkpoint has passed: a restart resumes from there.
        self.journal.trim(resume_after(self.config.index_dir, self.journal))
        if changed:
            log.info("watch.reconciled", changed=len(changed), files=len(candidates))

    def _unreadable(self, problems: Iterable[tuple[str, str, str]]) -> None:
        """Journal each folder that cannot be listed, once (coverage names it skipped); it
        stays in the view, so once readable again it is gone and its skip goes with it."""
        events = [
            SourceEvent(UNREADABLE, path, agent, 0, 0, 0, 0, 0, 0, self.now_ns())
            for path, agent, reason in problems
            if reason == SOURCE_UNREADABLE and path not in self.view
        ]
        for e in events:
            self.view[e.path] = Known(e.agent, -1, -1, -1, -1, -1, None)
        if events:
            placed = self.journal.append(events)
            self.journaled += len(placed)
            log.info("journal.appended", events=len(placed), unreadable=len(placed))

    # -- the archive ---------------------------------------------------------------------

    def _forget_blocked(self) -> bool:
        """Journal a forget event for each session the tombstones or the exclusion rules
        now keep out (checked at start and whenever the tombstones change); True if any."""
        stamp = self.keep_out.archive.tombstones_stamp()
        if stamp == self._tombstones:
            return False
        self._tombstones = stamp
        known = {**self.archived, **{p: k.agent for p, k in self.view.items()}}
        try:
            blocked = self.keep_out.blocked(known)
        except CorruptRecord as exc:
            log.error("archive.tombstones_unreadable", error=str(exc))
            return False
        if not blocked:
            return False
        now_ns = self.now_ns()
        events = [_forget(p, known[p], now_ns) for p in sorted(blocked)]
        for p in blocked:
            self.view.pop(p, None)
            self.archived.pop(p, None)
        placed = self.journal.append(events)
        self.journaled += len(placed)
        log.info("journal.appended", events=len(placed), forgotten=len(placed))
        return True

    def _moves(self, events: list[SourceEvent]) -> list[SourceEvent]:
        """A session file renamed within the roots is a delete and a new file with the same
        inode that begins with the old bytes: the old path's delete says ``moved``, so its
        archived copy goes instead of standing beside the session's new path."""
        out: list[SourceEvent] = []
        fresh = {(e.dev, e.inode): e for e in events if e.kind != "delete"}
        for e in events:
            if e.kind == "delete" and e.dev >= 0:
                to = fresh.get((e.dev, e.inode))
                if to is None:
                    to_path = next(
                        (p for p, k in self.view.items() if (k.dev, k.inode) == (e.dev, e.inode)),
                        None,
                    )
                else:
                    to_path = to.path
                known = self._sizes.pop(e.path, None)
                if (
                    to_path is not None
                    and to_path != e.path
                    and known is not None
                    and begins_with(to_path, *known)
                ):
                    e = replace(e, extra={**e.extra, "moved": to_path})
                    self.archived.pop(e.path, None)
            out.append(e)
        return out

    def _unknown_chains(self, live: Iterable[object]) -> None:
        """At start: archived sessions the published index does not hold (built under
        another policy, or the index was lost) get a delete event, which the worker turns
        into a session read from the archive; forgotten or excluded ones a forget event."""
        if not self.keeps:
            return
        archive = self.keep_out.archive
        names = archive.names()
        if not names:
            return
        names -= {key_name(getattr(c, "path", "")) for c in live}
        # known already: in the index (a folder that cannot be listed keeps them) or archived
        names -= {key_name(p) for p in (*self.view, *self.archived)}
        now_ns = self.now_ns()
        events: list[SourceEvent] = []
        for name in sorted(names):
            try:
                chain = archive.head_of(name)
            except CorruptRecord:
                continue
            if chain is None or chain.length == 0 or key_name(chain.key) != name:
                continue
            if self.keep_out.blocks(chain.key):
                events.append(_forget(chain.key, chain.agent, now_ns))
                continue
            self.archived[chain.key] = chain.agent
            events.append(
                SourceEvent("delete", chain.key, chain.agent, 0, 0, 0, chain.stamp[3], 0, 0, now_ns)
            )
        if events:
            placed = self.journal.append(events)
            self.journaled += len(placed)
            log.info("archive.found", events=len(placed))

    # -- helpers ---------------------------------------------------------------------------

    def _members_of(self, paths: list[str]) -> list[str]:
        """*paths* with each session database written (the file or its ``-wal``) replaced by
        its sessions whose stamps moved, new ones and those it no longer holds: a new
        message is one session's event, not every session's in the file."""
        out: list[str] = []
        for path in paths:
            in_tree = self._tree_member_of(path)
            if in_tree is not None:
                out += in_tree
                continue
            found = self._database_of(path)
            if found is None:
                out.append(path)
                continue
            db, agent = found
            if path in self.view:
                out.append(path)  # named unreadable before: classified, so its skip goes
            layout = adapter(agent).database
            assert layout is not None
            try:
                members = list_members(db, layout)
            except FileNotFoundError:
                members = {}
            except DbUnreadable:
                continue  # the reconcile scan names it
            prefix = db + MEMBER
            out += [p for p in self.view if p.startswith(prefix) and p not in members]
            for sid, stamp in members.items():
                member = member_path(db, sid)
                known = self.view.get(member)
                if known is None or not same_stamp(known.stamp, stamp):
                    out.append(member)
                if known is None:
                    # new here: migrated from a tree beside it, whose copy is superseded now
                    out += [m for m in layout.legacy(os.path.dirname(db), sid) if m in self.view]
        return sorted(set(out))

    def _tree_member_of(self, path: str) -> list[str] | None:
        """For a file inside a tree of session files (``DbLayout.trees``), the member it
        belongs to ([] when none); None when *path* is not inside a tree. Costs a lookup in
        the bounded owner map, or once per unknown owner one stat per session folder."""
        for root, agent in self._roots:
            layout = adapter(agent).database
            if layout is None or not path.startswith(root + os.sep):
                continue
            top = path[len(root) + 1 :].split(os.sep, 1)[0]
            tree = layout.tree(top)
            if tree is None or os.sep not in path[len(root) + 1 :]:
                return None
            folder = os.path.join(root, top)
            sid = session_of(folder, tree, path, self._owners)
            return [member_path(folder, sid)] if sid is not None else []
        return None

    def in_tree(self, path: str) -> bool:
        """True when *path* lies inside a tree of session files (``DbLayout.trees``)."""
        for root, agent in self._roots:
            layout = adapter(agent).database
            if layout is not None and path.startswith(root + os.sep):
                rest = path[len(root) + 1 :]
                return os.sep in rest and layout.tree(rest.split(os.sep, 1)[0]) is not None
        return False

    def _database_of(self, path: str) -> tuple[str, str] | None:
        """(database, agent) when *path* is a session database in a root or its write-ahead
        log (``-wal``; never ``-shm``, which readers write too)."""
        db = path.removesuffix("-wal")
        for root, agent in self._roots:
            if os.path.dirname(db) == root:
                layout = adapter(agent).database
                if layout is not None and layout.holds(os.path.basename(db)):
                    return db, agent
                return None
        return None

    def agent_of(self, path: str) -> str | None:
        """The agent whose root holds *path* as discovery would list it, else None."""
        for root, agent in self._roots:
            if path.startswith(root + os.sep):
                if not is_session(agent, path):
                    return None
                # discovery never follows a link, so neither may a path it would not list
                folder = os.path.dirname(path)
                while len(folder) > len(root):
                    if os.path.islink(folder):
                        return None
                    folder = os.path.dirname(folder)
                return agent
        return None

    def statistics(self) -> WatcherStats:
        with self._lock:
            dirty = len(self._dirty)
        return WatcherStats(
            head=self.journal.head(),
            known=len(self.view),
            dirty=dirty,
            journaled=self.journaled,
            reconciles=self.reconciles,
            journal_bytes=self.journal.bytes_written,
            held_back=self._held_back,
        )


def _forget(path: str, agent: str, now_ns: int) -> SourceEvent:
    return SourceEvent("forget", path, agent, 0, 0, 0, 0, 0, 0, now_ns)


def _gone(path: str, known: Known, now_ns: int) -> SourceEvent:
    return SourceEvent(
        "delete", path, known.agent, known.dev, known.inode, 0, known.mtime_ns, 0, 0, now_ns
    )


def _all_after(journal: Journal, after: int) -> Iterable[SourceEvent]:
    while True:
        events = journal.read(after, limit=4096)
        if not events:
            return
        yield from events
        after = events[-1].position


class _Overflow(logging.Handler):
    """watchdog reports an inotify queue overflow only as a log record: turn it into a scan."""

    def __init__(self, on_overflow: Callable[[], None]) -> None:
        super().__init__(logging.WARNING)
        self.on_overflow = on_overflow

    def emit(self, record: logging.LogRecord) -> None:
        if record.msg == "Inotify queue overflowed; filesystem events were lost":
            self.on_overflow()


class Observers:
    """watchdog observers on every existing root, feeding ``Watcher.mark``."""

    def __init__(self, watcher: Watcher) -> None:
        self.watcher = watcher
        self._observer: BaseObserver | None = None
        self._watched: set[str] = set()
        self._overflow = _Overflow(watcher.request_reconcile)

    def start(self, roots: Mapping[str, Path]) -> None:
        observer = Observer()
        observer.daemon = True
        observer.start()
        self._observer = observer
        logging.getLogger("watchdog.observers.inotify_c").addHandler(self._overflow)
        self.watch_new_roots(roots)

    def watch_new_roots(self, roots: Mapping[str, Path]) -> None:
        """Watch roots that exist now and were not watched yet (a root may appear later)."""
        observer = self._observer
        if observer is None:
            return
        handler = _Handler(self.watcher)
        for agent, root in roots.items():
            # a session database lies in its root itself (``pipeline.discovery``), a tree of
            # session files in a folder of its own there, watched whole (it may appear later:
            # the scan its folder's creation requests brings it here again)
            layout = adapter(agent).database
            folders = [(root, layout is None)]
            folders += [(root / t.folder, True) for t in (layout.trees if layout else ())]
            for folder, deep in folders:
                key = str(folder)
                if key in self._watched or not folder.is_dir():
                    continue
                try:
                    observer.schedule(handler, key, recursive=deep)
                except OSError as exc:  # e.g. inotify watch limit: the reconcile scan still runs
                    log.warning("watch.unavailable", root=key, error=str(exc))
                    continue
                self._watched.add(key)
                self.watcher.request_reconcile()

    def stop(self) -> None:
        logging.getLogger("watchdog.observers.inotify_c").removeHandler(self._overflow)
        observer = self._observer
        self._observer = None
        if observer is not None:
            observer.stop()
            observer.join(timeout=5)


class _Handler(FileSystemEventHandler):
    """Runs on the observer thread: mark paths, request scans; nothing else."""

    _IGNORED = frozenset({"opened", "closed_no_write"})

    def __init__(self, watcher: Watcher) -> None:
        super().__init__()
        self.watcher = watcher

    def on_any_event(self, event: FileSystemEvent) -> None:
        kind = event.event_type
        if kind in self._IGNORED:
            return
        if event.is_directory:
            # A folder moved in or out brings no per-file events: scan. A tree of session
            # files makes a folder per message (``store.dbtree``): its files come as events.
            if kind == "created" and self.watcher.in_tree(os.fsdecode(event.src_path)):
                return
            if kind in ("created", "moved", "deleted"):
                self.watcher.request_reconcile()
            return
        for raw in (event.src_path, event.dest_path):
            if raw:
                self.watcher.mark(os.fsdecode(raw))
