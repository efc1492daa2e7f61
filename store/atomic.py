"""Durable, all-or-nothing file replacement, and private directories.

Everything the index publishes is written with ``atomic_write``: a reader (or a process that
survives a crash) sees the old bytes or the new ones, never a mix. Files are 0600 and folders
0700 whatever the umask, since session logs hold private conversations.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import queue
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Final, TypeVar

T = TypeVar("T")

__all__ = [
    "DIR_MODE",
    "FILE_MODE",
    "DurableBatch",
    "SyncThreads",
    "atomic_write",
    "ensure_dir",
    "fsync_all",
    "fsync_dir",
]

FILE_MODE = 0o600
DIR_MODE = 0o700
# fsyncs in flight at once for a batch: enough for the filesystem to fold them into one
# journal commit, few enough not to matter as threads.
_SYNC_THREADS: Final = 8
# A temp file's name: this process's id and a counter (tempfile.mkstemp's random name and
# parameter checks cost ~4 us a file more; what a profile shows under mkstemp is mostly the
# kernel creating the file, 30-250 us on the bench machine's ext4). O_EXCL still refuses a
# name taken, by a crashed process of the same id say: the next number is tried.
_TEMP_FLAGS: Final = (
    os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
)
_TEMP_TRIES: Final = 10_000
_temp_numbers = itertools.count()


def _temp_beside(path: Path) -> tuple[int, str]:
    """A new private file beside *path* (``.<name>.<pid>-<n>.tmp``, open for writing) and its
    name; the directory scans and GC skip it for its leading "."."""
    stem = f"{os.fspath(path.parent)}/.{path.name}.{os.getpid()}-"
    for _ in range(_TEMP_TRIES):
        tmp = f"{stem}{next(_temp_numbers)}.tmp"
        try:
            return os.open(tmp, _TEMP_FLAGS, FILE_MODE), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temp file name beside {path}")


def fsync_all(sync: Callable[[T], None], items: Iterable[T]) -> None:
    """``sync`` each of *items*, several at once (a journaling file system folds concurrent
    fsyncs into one commit where one after another costs a commit each); raises the first
    error once all are done."""
    todo = list(items)
    if len(todo) <= 1:
        for item in todo:
            sync(item)
        return
    # (threads of their own, gone when done: a process keeps no idle threads behind)
    with ThreadPoolExecutor(min(len(todo), _SYNC_THREADS), thread_name_prefix="fsync") as pool:
        futures = [pool.submit(sync, item) for item in todo]
    errors = [e for e in (f.exception() for f in futures) if e is not None]
    if errors:
        raise errors[0]


class SyncThreads:
    """Threads that run ``fsync_all``'s work batch after batch, where ``fsync_all`` starts
    threads of its own each call. A process committing batch after batch (an index worker:
    one ``DurableBatch`` of ~24 files per 8 sessions) paid ~8 thread starts each time, on
    loaded cores ~10 ms of wall time a batch, more than the fsyncs themselves. A thread ends
    after *idle_s* without work, or at ``close``, so a process left idle keeps none behind;
    a forked child never uses its parent's (it starts its own). For a process that does not
    fork: one that does would spawn its workers while these live (``pipeline.forked``)."""

    def __init__(self, size: int = _SYNC_THREADS, idle_s: float = 2.0) -> None:
        self.size = size
        self.idle_s = idle_s
        self._reset()

    def _reset(self) -> None:
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._work: queue.SimpleQueue[tuple[Callable[[Any], None], Any, int, _Done] | None] = (
            queue.SimpleQueue()
        )
        self._live: list[threading.Thread] = []

    @property
    def threads(self) -> int:
        """How many threads are alive (or about to end) now."""
        return len(self._live) if self._pid == os.getpid() else 0

    def run(self, sync: Callable[[T], None], items: Iterable[T]) -> None:
        """``fsync_all(sync, items)`` on these threads."""
        todo = list(items)
        if len(todo) <= 1:
            fsync_all(sync, todo)
            return
        if self._pid != os.getpid():  # forked: the threads (and the lock's holder) stayed behind
            self._reset()
        done = _Done(len(todo))
        with self._lock:
            for i, item in enumerate(todo):
                self._work.put((sync, item, i, done))
            for _ in range(min(len(todo), self.size) - len(self._live)):
                thread = threading.Thread(target=self._serve, name="fsync", daemon=True)
                self._live.append(thread)
                thread.start()
        done.wait()

    def close(self) -> None:
        """End every thread now (when the last ``run`` is done), not after *idle_s*."""
        if self._pid != os.getpid():
            self._reset()
            return
        with self._lock:
            live, self._live = self._live, []
            for _ in live:
                self._work.put(None)
        for thread in live:
            thread.join()

    def _serve(self) -> None:
        work, lock, live = self._work, self._lock, self._live
        me = threading.current_thread()
        while True:
            try:
                job = work.get(timeout=self.idle_s)
            except queue.Empty:
                with lock:  # run() queues under the lock: no work is left without a thread
                    if work.empty():
                        live.remove(me)
                        return
                continue
            if job is None:  # close()
                return
            sync, item, i, done = job
            try:
                sync(item)
            except BaseException as exc:  # raised by run(), in the caller's thread
                done.finish(i, exc)
            else:
                done.finish(i, None)


class _Done:
    """The items of one ``SyncThreads.run`` still in flight, and their errors."""

    def __init__(self, n: int) -> None:
        self._left = n
        self._lock = threading.Lock()
        self._event = threading.Event()
        self._errors: dict[int, BaseException] = {}

    def finish(self, i: int, error: BaseException | None) -> None:
        with self._lock:
            if error is not None:
                self._errors[i] = error
            self._left -= 1
            if not self._left:
                self._event.set()

    def wait(self) -> None:
        """Until every item is done; then raises the first item's error, as fsync_all."""
        self._event.wait()
        if self._errors:
            raise self._errors[min(self._errors)]


def fsync_dir(path: Path) -> None:
    """Make renames and unlinks inside *path* durable."""
    dir_fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def atomic_write(path: Path, data: bytes, *, sync_dir: bool = True) -> None:
    """Replace *path* with *data* so readers see the old bytes or the new ones, never a mix.

    The temp file lives in the same directory (rename is only atomic within one
    filesystem) and starts with "." so directory scans and GC skip it. ``sync_dir=False``
    leaves the rename's durability to the caller, who must ``fsync_dir`` the folder before
    anything that points at *path* is made durable (the writer does so once per folder when
    it publishes, instead of once per record).
    """
    fd, tmp = _temp_beside(path)
    try:
        with os.fdopen(fd, "wb") as f:
            # open's 0600 is still filtered by the umask; set it exactly.
            os.fchmod(f.fileno(), FILE_MODE)
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    if sync_dir:
        fsync_dir(path.parent)  # make the rename itself durable


def ensure_dir(path: Path) -> Path:
    """Create *path* and any missing parents as 0700 folders; existing ones are left alone."""
    missing: list[Path] = []
    p = path
    while not p.is_dir():
        missing.append(p)
        if p.parent == p:
            break
        p = p.parent
    for d in reversed(missing):
        try:
            d.mkdir(mode=DIR_MODE)
        except FileExistsError:
            if not d.is_dir():
                raise
            continue  # another process made it: not ours to chmod
        # mkdir's mode is filtered by the umask (e.g. 0o277 would give 0o500).
        os.chmod(d, DIR_MODE)
    return path


class DurableBatch:
    """Many ``atomic_write``s made durable and visible together.

    ``write`` puts each file's bytes in a temp file beside it (0600, not yet synced);
    ``commit`` fsyncs every temp file and only then renames each over its path, in the order
    they were written, so every file still goes temp, fsync, replace, and a reader or a crash
    sees old bytes or new ones. The
    fsyncs run concurrently: a journaling filesystem makes them durable in one commit where
    one after another costs a commit each (on the size-S bench, ~0.85 s of a 4.8 s build).
    ``abandon`` (or a failed ``commit``) deletes the temp files that were not renamed.
    """

    def __init__(self, threads: SyncThreads | None = None) -> None:
        self._pending: list[tuple[int, str, Path]] = []
        # the threads to fsync on (None: threads of the commit's own, gone when it is done)
        self.threads = threads

    def __len__(self) -> int:
        return len(self._pending)

    def write(self, path: Path, data: bytes) -> None:
        fd, tmp = _temp_beside(path)
        try:
            os.fchmod(fd, FILE_MODE)  # open's 0600 is still filtered by the umask
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        except BaseException:
            os.close(fd)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
        self._pending.append((fd, tmp, path))

    def commit(self) -> None:
        try:
            fds = [fd for fd, _, _ in self._pending]
            if self.threads is not None:
                self.threads.run(os.fsync, fds)
            else:
                fsync_all(os.fsync, fds)
            while self._pending:
                fd, tmp, path = self._pending[0]
                os.replace(tmp, path)
                os.close(fd)
                self._pending.pop(0)
        finally:
            self.abandon()

    def abandon(self) -> None:
        for fd, tmp, _ in self._pending:
            os.close(fd)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        self._pending.clear()
