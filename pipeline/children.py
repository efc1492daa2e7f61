"""The processes the supervisor starts: what each runs, and how it reports back.

Every child is forked by the supervisor (which imported this module and warmed what it uses
before) and is handed the config, the settings, shared flags and its end of a pipe. It then:

1. dies with its parent, the supervisor (Linux ``PR_SET_PDEATHSIG``; elsewhere it polls
   ``getppid``), so a supervisor killed with SIGKILL leaves no orphan behind;
2. ignores SIGINT (a terminal's Ctrl-C reaches the whole process group; the supervisor decides)
   and turns SIGTERM into a stop flag; the supervisor's signal wakeup descriptor, inherited
   with the fork, is let go (the child's signals are its own);
3. boots its role (``watcher``, ``index``, ``publisher``) and says ``("ready", pid)``, or
   ``("boot_failed", traceback)`` and exits with ``EXIT_BOOT``;
4. runs ``loop_once`` until told to stop, beating its heartbeat and sending ``("stats", …)``
   once a second, and ``("warm", pid)`` once its start-up work is done (the watcher's first
   reconcile, an index worker's warming: ``warm()``, begun once the changes the start found
   are published: ``WarmGate``); a crash sends ``("crashed", traceback)`` before the process
   exits.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import queue
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, Protocol

import structlog

from pipeline.engine import policy_of
from pipeline.logs import configure_logging
from pipeline.publisher import Publisher
from pipeline.quarantine import Breadcrumb, Quarantined
from pipeline.resume import journal_start
from pipeline.settings import RunSettings
from pipeline.watcher import Observers, Watcher
from pipeline.workers import IndexWorker, WorkerBatch
from store.config import Config
from store.errors import StoreLocked, is_disk_full
from store.journal import FileJournal
from store.layout import IndexLayout
from store.reasons import DISK_FULL
from store.writer import StoreWriter

__all__ = [
    "EXIT_BOOT",
    "EXIT_DISK_FULL",
    "EXIT_ORPHANED",
    "ChildSpec",
    "Flag",
    "Shared",
    "Stopping",
    "WarmGate",
    "child_main",
]

log = structlog.get_logger()

EXIT_BOOT: Final = 3
EXIT_ORPHANED: Final = 4
# The index's disk is full: not a crash of the child's; the supervisor waits for room.
EXIT_DISK_FULL: Final = 75  # EX_TEMPFAIL
_STATS_EVERY_S: Final = 1.0
# An index worker's warming waits at most this long for the start's changes to be published.
_WARM_WAIT_S: Final = 2.0
_LOCK_WAIT_S: Final = 30.0
_PR_SET_PDEATHSIG: Final = 1


class Stopping(Exception):
    """Raised inside a child's loop when a stop was requested while it waited."""


@dataclass(frozen=True, slots=True)
class ChildSpec:
    """Everything a child needs, picklable."""

    role: str
    name: str
    config: Config
    settings: RunSettings
    parent_pid: int  # the supervisor's: the process that forks the children
    worker_id: int = 0
    log_json: bool = True
    log_level: int = 20
    quarantine: tuple[Quarantined, ...] = ()  # sessions an index worker must not index


class _Value(Protocol):
    value: Any


class Flag:
    """A stop flag in shared memory, with no lock: a child killed at any moment can never
    leave it held. (A ``multiprocessing.Event`` can: its ``set`` waits for every sleeper to
    acknowledge, and a sleeper killed by SIGKILL never does.)"""

    def __init__(self, value: _Value) -> None:
        self._value = value  # a RawValue("b"), shared with children at their start

    def set(self) -> None:
        self._value.value = 1

    def clear(self) -> None:
        self._value.value = 0

    def is_set(self) -> bool:
        return bool(self._value.value)

    def wait(self, timeout: float) -> bool:
        """Sleep up to *timeout* seconds, waking within 20 ms of the flag being set."""
        deadline = time.monotonic() + timeout
        while not self.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                break
            time.sleep(min(left, 0.02))
        return self.is_set()


class _Conn(Protocol):
    def send(self, obj: Any) -> None: ...


@dataclass(frozen=True, slots=True)
class Shared:
    """The supervisor's shared objects a child uses (each created once by the supervisor)."""

    stop: Flag
    heartbeat: _Value  # beaten by each pass of the loop: progress
    published: _Value
    alive: _Value | None = None  # beaten by a thread of the child: the process runs
    results: Any = None  # the bounded index → publisher queue of the current group
    # one semaphore per index worker: the watcher releases them all after it journals,
    # a worker waits on its own instead of sleeping out its idle timer
    wakes: tuple[Any, ...] = ()
    breadcrumb: Breadcrumb | None = None  # an index worker's: the session it works on
    # set once the watcher has journaled what changed before the start: index workers warm
    # sessions only after that, so the changes a start finds are handled first
    watching: Flag | None = None


class _Role(Protocol):
    def loop_once(self, now: float) -> bool: ...

    def warm(self) -> bool:
        """True once the work a start brings is done (then the pipeline is ready)."""

    def statistics(self) -> dict[str, object]: ...

    def close(self) -> None: ...


def child_main(spec: ChildSpec, shared: Shared, conn: _Conn) -> None:
    """The target of every child."""
    _die_with_parent(spec.parent_pid)
    signal.set_wakeup_fd(-1)
    terminated: list[int] = []
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, lambda signum, frame: terminated.append(signum))
    configure_logging(json=spec.log_json, level=spec.log_level)
    structlog.contextvars.bind_contextvars(process=spec.name)

    def stopping() -> bool:
        return bool(terminated) or shared.stop.is_set()

    try:
        role = _boot(spec, shared, stopping)
    except BaseException:
        conn.send(("boot_failed", traceback.format_exc()))
        sys.exit(EXIT_BOOT)
    conn.send(("ready", os.getpid()))
    _beat_alive(shared, spec.settings.alive_every_s)
    try:
        _run(spec, shared, conn, role, stopping)
    except Stopping:
        pass
    except BaseException as exc:
        if is_disk_full(exc):
            conn.send((DISK_FULL, traceback.format_exc()))
            sys.exit(EXIT_DISK_FULL)
        conn.send(("crashed", traceback.format_exc()))
        sys.exit(1)
    finally:
        with contextlib.suppress(Exception):
            role.close()
    conn.send(("stopped", os.getpid()))


def _beat_alive(shared: Shared, every_s: float) -> None:
    """Beat ``shared.alive`` from a daemon thread until the process ends."""
    alive = shared.alive
    if alive is None:
        return

    def beat() -> None:
        while True:
            alive.value = time.time()
            time.sleep(every_s)

    alive.value = time.time()
    threading.Thread(target=beat, name="alive", daemon=True).start()


def _run(
    spec: ChildSpec, shared: Shared, conn: _Conn, role: _Role, stopping: Callable[[], bool]
) -> None:
    settings = spec.settings
    idle = settings.idle_min_s
    stats_at = 0.0
    warm = False
    while not stopping():
        now = time.monotonic()
        shared.heartbeat.value = time.time()
        if os.getppid() != spec.parent_pid:
            os._exit(EXIT_ORPHANED)  # the supervisor is gone: nothing may outlive it
        busy = role.loop_once(now)
        if not warm and role.warm():
            warm = True
            conn.send(("warm", os.getpid()))
        if now - stats_at >= _STATS_EVERY_S:
            conn.send(("stats", role.statistics()))
            stats_at = now
        if busy:
            idle = settings.idle_min_s
        elif not getattr(role, "blocks", False):
            _pause(shared.stop, getattr(role, "wake", None), idle)
            idle = min(idle * 2, settings.idle_max_s)


class _Wake(Protocol):
    def wait(self, timeout: float) -> bool: ...


class _Semaphore:
    """A worker's wake semaphore as a ``_Wake``: one wait drains every release so far."""

    def __init__(self, semaphore: Any) -> None:
        self._semaphore = semaphore

    def wait(self, timeout: float) -> bool:
        if not self._semaphore.acquire(timeout=timeout):
            return False
        while self._semaphore.acquire(False):
            pass
        return True


def _pause(stop: Flag, wake: _Wake | None, timeout: float) -> None:
    """Sleep up to *timeout* seconds; a role that can tell when work arrives (``wake``) is
    woken at once, not on the timer. Either way the stop flag is seen within 20 ms."""
    if wake is None:
        stop.wait(timeout)
        return
    deadline = time.monotonic() + timeout
    while not stop.is_set():
        left = deadline - time.monotonic()
        if left <= 0 or wake.wait(min(left, 0.02)):
            return


def _die_with_parent(parent_pid: int) -> None:
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent_pid:
        os._exit(EXIT_ORPHANED)  # the parent died before the line above took effect


def _boot(spec: ChildSpec, shared: Shared, stopping: Callable[[], bool]) -> _Role:
    if spec.role == "watcher":
        return _WatcherRole(spec, shared)
    if spec.role == "index":
        return _IndexRole(spec, shared, stopping)
    if spec.role == "publisher":
        return _PublisherRole(spec, shared, stopping)
    raise ValueError(f"unknown role {spec.role!r}")


class _WatcherRole:
    def __init__(self, spec: ChildSpec, shared: Shared) -> None:
        config = spec.config
        layout = IndexLayout(config.index_dir)
        self.config = config
        self.journal = FileJournal(
            layout.journal, writable=True, start_at=journal_start(config.index_dir)
        )
        self.watcher = Watcher(
            config,
            self.journal,
            policy=policy_of(config).fingerprint(),
            published=lambda: int(shared.published.value),
            settings=spec.settings,
        )
        self.watcher.boot()
        self.observers = Observers(self.watcher)
        self.observers.start(config.roots)
        self._reconciles = 0
        self.wake = self.watcher.changed  # the observer thread marks a path: journal it now
        self._workers = shared.wakes

    def loop_once(self, now: float) -> bool:
        journaled = self.watcher.journaled
        busy = self.watcher.loop_once(now)
        if self.watcher.journaled != journaled:
            for wake in self._workers:
                wake.release()
        if self.watcher.reconciles != self._reconciles:
            self._reconciles = self.watcher.reconciles
            self.observers.watch_new_roots(self.config.roots)  # a root may appear later
        return busy

    def warm(self) -> bool:
        return self.watcher.reconciles > 0  # every change made before the start is journaled

    def statistics(self) -> dict[str, object]:
        s = self.watcher.statistics()
        return {
            "head": s.head,
            "known": s.known,
            "dirty": s.dirty,
            "journaled": s.journaled,
            "reconciles": s.reconciles,
            "bytesWritten": s.journal_bytes,
            "heldBack": s.held_back,
        }

    def close(self) -> None:
        self.observers.stop()
        self.journal.close()


class _QueueOutbox:
    def __init__(self, results: Any, stopping: Callable[[], bool]) -> None:
        self.results = results
        self.stopping = stopping

    def put(self, batch: WorkerBatch) -> None:
        while True:
            try:
                self.results.put(batch, timeout=0.2)
                return
            except queue.Full:
                if self.stopping():
                    raise Stopping from None


class _QueueInbox:
    def __init__(self, results: Any) -> None:
        self.results = results

    def get(self, timeout: float) -> WorkerBatch | None:
        try:
            if timeout <= 0:
                batch: WorkerBatch = self.results.get(block=False)
            else:
                batch = self.results.get(timeout=timeout)
        except queue.Empty:
            return None
        return batch


class _IndexRole:
    def __init__(self, spec: ChildSpec, shared: Shared, stopping: Callable[[], bool]) -> None:
        config = spec.config
        # Importing it warms this process (the supervisor did already, before the fork): not
        # in the module header, which `pipeline status` imports through the supervisor's.
        from pipeline.preload import warm

        warm(policy_of(config))  # at boot, not on the first session
        self.journal = FileJournal(IndexLayout(config.index_dir).journal)
        self.worker = IndexWorker(
            config,
            worker_id=spec.worker_id,
            settings=spec.settings,
            journal=self.journal,
            outbox=_QueueOutbox(shared.results, stopping),
            policy=policy_of(config),
            breadcrumb=shared.breadcrumb,
            quarantine={q.path: q for q in spec.quarantine},
        )
        self.worker.boot()
        self._gate = WarmGate(
            shared.watching,
            lambda: self.journal.head(),
            lambda: max(int(shared.published.value), self.worker.position_at_boot),
        )
        self._planned = False
        self.wake = _Semaphore(shared.wakes[0]) if shared.wakes else None

    def loop_once(self, now: float) -> bool:
        if not self._planned and self._gate.open(now):
            self._planned = True
            self.worker.plan_warm()
        return self.worker.loop_once(now)

    def warm(self) -> bool:
        return self._planned and not self.worker.warming()

    def statistics(self) -> dict[str, object]:
        return self.worker.statistics()

    def close(self) -> None:
        self.worker.flush(time.monotonic())
        self.journal.close()


class WarmGate:
    """When an index worker that just started may begin warming (``IndexWorker.plan_warm``).

    Once the watcher has journaled what changed before the start (the shared flag
    ``watching``), and that much is published (or ``_WARM_WAIT_S`` passed since): warming
    builds sessions whole, on the CPUs the start's own changes (an append made while the
    pipeline started, the first one a user waits on) need to be indexed and published first
    (issue 22 item 11). Every worker waits, not only the one that owns a change.
    """

    def __init__(
        self, watching: Flag | None, head: Callable[[], int], published: Callable[[], int]
    ) -> None:
        self._watching = watching
        self._head = head  # the journal's last position
        self._published = published  # the last position published
        self._until: int | None = None
        self._deadline = 0.0

    def open(self, now: float) -> bool:
        if self._watching is not None and not self._watching.is_set():
            return False
        if self._until is None:
            self._until = self._head()  # the start's changes are journaled by now
            self._deadline = now + _WARM_WAIT_S
        return self._published() >= self._until or now >= self._deadline


class _PublisherRole:
    """Holds the writer lock for its whole life; drains the queue before it stops."""

    # Its loop blocks on the queue (up to ``wait``), so it takes no pause besides: a pause
    # would leave a handed-over batch unpublished until it ended (up to idle_max_s).
    blocks = True

    def __init__(self, spec: ChildSpec, shared: Shared, stopping: Callable[[], bool]) -> None:
        config = spec.config
        self.stack = contextlib.ExitStack()
        self.writer = StoreWriter(config.index_dir)
        deadline = time.monotonic() + _LOCK_WAIT_S
        while True:
            try:
                self.stack.enter_context(self.writer.lock())
                break
            except StoreLocked:
                # e.g. a `pipeline rebuild` took the lock while this group restarted
                if time.monotonic() >= deadline or stopping():
                    raise
                time.sleep(0.2)
        self.journal = FileJournal(IndexLayout(config.index_dir).journal)
        self.inbox = _QueueInbox(shared.results)

        def published(position: int) -> None:
            shared.published.value = position

        self.publisher = Publisher(
            config,
            settings=spec.settings,
            inbox=self.inbox,
            journal=self.journal,
            policy=policy_of(config),
            writer=self.writer,
            on_published=published,
            background_lexicon=True,
        )
        self.publisher.boot(time.monotonic())
        self.wait = spec.settings.idle_max_s

    def loop_once(self, now: float) -> bool:
        # Block on the queue itself: a handed-over batch is published at once.
        return self.publisher.loop_once(now, wait=self.wait)

    def warm(self) -> bool:
        return True

    def statistics(self) -> dict[str, object]:
        return self.publisher.statistics()

    def close(self) -> None:
        try:
            now = time.monotonic()
            self.publisher.loop_once(now)  # whatever the stopped workers handed over last
            self.publisher.flush(now)
        finally:
            self.publisher.close()
            self.stack.close()
            self.journal.close()
