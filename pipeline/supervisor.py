"""The supervisor of `pipeline run`: start the watcher, index workers and publisher; keep them up.

::

    ProcessSupervisor.run()
      preflight: the writer lock and the journal lock are free (waits a little for a previous
                 run's children to finish dying, then StoreLocked)
      upgrade: an index another format or derivation wrote is derived again first, as
                 `pipeline run --once` does (pipeline.upgrade): one generation, published
                 whole, before any child starts (so no child publishes a partial one)
      fork ("fork" context; pipeline.children): this process imports the children's modules
      and warms them (pipeline.preload) before it forks the children that use them, so a
      (re)start costs a fork, not an interpreter per child importing everything on loaded
      cores (issue 22 item 11: that made the first append after start-up take seconds).
      The watcher needs none of the warming (credential rules): it is forked first, and its
      first scan runs while this process compiles the rules for the index workers and the
      publisher, forked next. This process never starts a thread, so a fork never copies a
      lock some other thread held.

          watcher ──► journal ◄── index-0 … index-(n-1) ══ bounded Queue ══► publisher

      loop: wait(child sentinels + child pipes + signal wakeup, 0.5 s)
        ("ready")            boot done                ("stats", {...})   kept for status
        ("warm")             its start-up work done (the watcher's first reconcile, an index
                             worker's warming): once every child is, the pipeline is ready
                             (event pipeline.ready; "ready"/"readyAt" in the state file).
                             Index workers warm only after the watcher's, once what it
                             found is published: the changes the start found go first (the
                             shared flag "watching", children.WarmGate)
        ("crashed", tb)      traceback for the log    ("boot_failed", tb)
        a child exits after "ready"  ─► worker.crashed (with its traceback) ─► restart after a
            capped, doubling backoff. Index workers and the publisher restart as one group:
            a death in the middle of a put can tear their shared queue (CPython's
            ProcessPoolExecutor makes the same assumption), and all of them resume from the
            publish checkpoint anyway. The watcher restarts alone.
        a child exits before "ready" ─► worker.boot_failed: stop everything, EXIT_BOOT_FAILED
        a heartbeat older than stall_s ─► SIGKILL, then as a crash
        SIGTERM / SIGINT (the handlers only set a flag) ─► stop the watcher and the workers,
            then the publisher, which publishes what they handed over; exit 0
      run/supervisor.json, every few seconds and on changes: children, states, restarts,
      heartbeats and statistics, for `pipeline status`

Children die with their parent, the supervisor (PR_SET_PDEATHSIG, or polling getppid), so
even SIGKILL leaves no orphan; everything they write is crash-safe, so killing one is always
allowed.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any, Final

import structlog

from pipeline.children import EXIT_BOOT, EXIT_DISK_FULL, ChildSpec, Flag, Shared, child_main
from pipeline.exits import describe_exit
from pipeline.quarantine import BREADCRUMB_BYTES, Breadcrumb, Quarantine, restore
from pipeline.resume import journal_start
from pipeline.settings import RunSettings
from store import jsonio
from store.atomic import atomic_write, ensure_dir
from store.config import Config
from store.errors import SchemaVersionError, StoreLocked, free_bytes
from store.exits import EXIT_BOOT_FAILED, EXIT_OK
from store.journal import FileJournal
from store.layout import IndexLayout
from store.reasons import DISK_FULL
from store.writer import StoreWriter

__all__ = [
    "ProcessSupervisor",
    "read_run_state",
    "run_state_path",
]

log = structlog.get_logger()

_LOCK_WAIT_S: Final = 10.0
_STATE_EVERY_S: Final = 5.0
_WATCH, _INDEX = "watch", "index"


def run_state_path(index_dir: Path) -> Path:
    return IndexLayout(Path(index_dir)).run / "supervisor.json"


def read_run_state(index_dir: Path) -> dict[str, Any] | None:
    """What the last (or running) supervisor wrote, or None."""
    try:
        data = run_state_path(index_dir).read_bytes()
    except FileNotFoundError:
        return None
    try:
        state = jsonio.loads(data)
    except ValueError:
        return None
    return state if isinstance(state, dict) else None


@dataclass(slots=True)
class _Child:
    name: str
    role: str
    group: str
    worker_id: int
    heartbeat: Any
    breadcrumb: Breadcrumb | None = None
    alive: Any = None
    process: Any = None
    conn: Any = None
    state: str = "starting"
    restarts: int = 0
    ready: bool = False
    warm: bool = False
    started_ns: int = 0
    last_error: str | None = None
    exitcode: int | None = None
    stats: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class _Group:
    failures: int = 0
    restart_at: float | None = None
    healthy_since: float | None = None


class ProcessSupervisor:
    """Runs the always-on pipeline until a signal; see the module docstring."""

    def __init__(
        self,
        config: Config,
        settings: RunSettings,
        *,
        log_json: bool = True,
        log_level: int = 20,
        target: Callable[[ChildSpec, Shared, Any], None] = child_main,
    ) -> None:
        import multiprocess  # deferred: `pipeline status` imports this module too

        self.target = target  # a picklable module-level function; tests inject faults here
        self.config = config
        self.settings = settings
        self.log_json = log_json
        self.log_level = log_level
        self.ctx = multiprocess.get_context("fork")
        self.layout = IndexLayout(config.index_dir)
        self.stop_work = Flag(self.ctx.Value("b", 0, lock=False))
        self.stop_publisher = Flag(self.ctx.Value("b", 0, lock=False))
        self.watching = Flag(self.ctx.Value("b", 0, lock=False))
        self.published = self.ctx.Value("q", -1, lock=False)
        self.wakes = tuple(self.ctx.Semaphore(0) for _ in range(settings.workers))
        self.results: Any = None
        self.children: dict[str, _Child] = {}
        self.groups = {_WATCH: _Group(), _INDEX: _Group()}
        self._signal: int | None = None
        self._boot_failure: _Child | None = None
        self._stopping = False
        self._state_at = 0.0
        self._state_dirty = True
        self._started_ns = time.time_ns()
        self._ready_ns: int | None = None
        names = [("watcher", "watcher", _WATCH, 0)]
        names += [(f"index-{k}", "index", _INDEX, k) for k in range(settings.workers)]
        names.append(("publisher", "publisher", _INDEX, 0))
        previous = read_run_state(config.index_dir) or {}
        self.quarantine = Quarantine(restore(previous.get("quarantined")))
        for name, role, group, worker_id in names:
            heartbeat = self.ctx.Value("d", 0.0, lock=False)
            crumb = (
                Breadcrumb(self.ctx.RawArray("c", BREADCRUMB_BYTES)) if role == "index" else None
            )
            self.children[name] = _Child(
                name, role, group, worker_id, heartbeat, crumb, self.ctx.Value("d", 0.0, lock=False)
            )

    # -- the run ---------------------------------------------------------------------------

    def run(self) -> int:
        """Run until SIGTERM/SIGINT (0) or a child that cannot start (EXIT_BOOT_FAILED)."""
        self._preflight()
        self._upgrade()
        with self._signals() as wakeup:
            try:
                log.info(
                    "pipeline.started",
                    index_dir=str(self.config.index_dir),
                    workers=self.settings.workers,
                )
                if self.quarantine.held():
                    # from the last run's state: these files are unchanged since
                    log.warning("quarantine.restored", paths=sorted(self.quarantine.held()))
                self._start_group(_WATCH)
                self._warm()  # while the watcher scans
                self._start_group(_INDEX)
                while True:
                    if self._signal is not None:
                        log.info("pipeline.stopping", signal=signal.Signals(self._signal).name)
                        return self._shutdown(EXIT_OK)
                    if self._boot_failure is not None:
                        child = self._boot_failure
                        log.critical(
                            "pipeline.boot_failed",
                            worker=child.name,
                            exitcode=child.exitcode,
                            traceback=child.last_error,
                        )
                        return self._shutdown(EXIT_BOOT_FAILED)
                    self._wait(wakeup, 0.5)
                    self._note_ready()
                    self._reap()
                    self._restart_due()
                    self._check_stalls()
                    self._write_state()
            finally:
                self._kill_all()
                self._write_state(final=True)

    def _ready(self) -> bool:
        """Every child is up and done with what a start brings."""
        return all(c.ready and c.warm and c.exitcode is None for c in self.children.values())

    def _note_ready(self) -> None:
        if self._ready_ns is not None or not self._ready():
            return
        self._ready_ns = time.time_ns()
        self._state_dirty = True
        log.info("pipeline.ready", seconds=round((self._ready_ns - self._started_ns) / 1e9, 3))

    def _warm(self) -> None:
        """Load what an index worker would otherwise load on its first session, once, here,
        before it is forked (see the module docstring). Importing pipeline.preload warms the
        adapters and the default credential rules; deferred like multiprocess, since
        `pipeline status` imports this module."""
        from pipeline.engine import policy_of
        from pipeline.preload import warm

        warm(policy_of(self.config))  # this config's rule set too: a child builds no redactor

    def _preflight(self) -> None:
        """Fail at once (StoreLocked) if another writer runs; wait a little for a previous
        run whose children are still dying."""
        ensure_dir(self.layout.run)
        deadline = time.monotonic() + _LOCK_WAIT_S
        while True:
            try:
                # (another build's journal is no obstacle: the upgrade that follows drops it)
                with (
                    StoreWriter(self.config.index_dir).lock(),
                    contextlib.suppress(SchemaVersionError),
                ):
                    FileJournal(
                        self.layout.journal,
                        writable=True,
                        start_at=journal_start(self.config.index_dir),
                    ).close()
                return
            except StoreLocked:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.1)

    def _upgrade(self) -> None:
        """Derive the index again when another format or derivation wrote it. Before the
        signal handlers: Ctrl-C stops it at once, nothing half-done published (the next run
        starts it again)."""
        from pipeline.engine import policy_of
        from pipeline.upgrade import detect

        if detect(self.config.index_dir, policy_of(self.config).fingerprint()) is None:
            return
        from pipeline.catchup import catch_up  # only now: its pool is for upgrades alone

        report = catch_up(self.config)
        log.info("pipeline.upgraded", generations=report.generations, indexed=report.indexed)

    @contextlib.contextmanager
    def _signals(self) -> Iterator[socket.socket]:
        """Handlers that only record the signal; a wakeup socket makes wait() return."""
        reader, writer = socket.socketpair()
        reader.setblocking(False)
        writer.setblocking(False)

        def note(signum: int, frame: FrameType | None) -> None:
            self._signal = signum

        old_fd = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
        old = {s: signal.signal(s, note) for s in (signal.SIGTERM, signal.SIGINT)}
        try:
            yield reader
        finally:
            for s, handler in old.items():
                signal.signal(s, handler)
            signal.set_wakeup_fd(old_fd)
            reader.close()
            writer.close()

    # -- children --------------------------------------------------------------------------

    def _start_group(self, group: str) -> None:
        if group == _INDEX:
            self.results = self.ctx.Queue(maxsize=self.settings.queue_size)
            self.stop_publisher.clear()
        members = [c for c in self.children.values() if c.group == group]
        for child in members:
            self._start(child)
        self.groups[group].restart_at = None
        self.groups[group].healthy_since = time.monotonic()

    def _start(self, child: _Child) -> None:
        receiver, sender = self.ctx.Pipe(duplex=False)
        spec = ChildSpec(
            role=child.role,
            name=child.name,
            config=self.config,
            settings=self.settings,
            parent_pid=os.getpid(),
            worker_id=child.worker_id,
            log_json=self.log_json,
            log_level=self.log_level,
            quarantine=tuple(self.quarantine.held().values()) if child.role == "index" else (),
        )
        if child.breadcrumb is not None:
            child.breadcrumb.clear()
        stop = self.stop_publisher if child.role == "publisher" else self.stop_work
        shared = Shared(
            stop=stop,
            heartbeat=child.heartbeat,
            published=self.published,
            results=self.results if child.group == _INDEX else None,
            wakes=_wakes_of(child, self.wakes),
            watching=self.watching if child.role == "index" else None,
            breadcrumb=child.breadcrumb,
            alive=child.alive,
        )
        child.heartbeat.value = child.alive.value = time.time()
        if threading.active_count() > 1:  # a fork copies locks that other threads may hold
            log.warning("supervisor.threaded", threads=[t.name for t in threading.enumerate()])
        process = self.ctx.Process(
            target=self.target, args=(spec, shared, sender), name=child.name, daemon=False
        )
        process.start()
        sender.close()
        child.process = process
        child.conn = receiver
        child.state = "starting"
        child.ready = child.warm = False
        child.exitcode = None
        child.started_ns = time.time_ns()
        self._state_dirty = True

    def _wait(self, wakeup: socket.socket, timeout: float) -> None:
        from multiprocess.connection import wait

        waitables: list[Any] = [wakeup]
        for child in self.children.values():
            if child.conn is not None:
                waitables.append(child.conn)
            if child.process is not None and child.exitcode is None:
                waitables.append(child.process.sentinel)
        for ready in wait(waitables, timeout):
            if ready is wakeup:
                with contextlib.suppress(BlockingIOError):
                    while wakeup.recv(4096):
                        pass
        for child in self.children.values():
            self._drain(child)

    def _drain(self, child: _Child) -> None:
        conn = child.conn
        if conn is None:
            return
        try:
            while conn.poll():
                self._message(child, conn.recv())
        except (EOFError, OSError):
            conn.close()
            child.conn = None

    def _message(self, child: _Child, message: tuple[Any, ...]) -> None:
        kind = message[0]
        if kind == "ready":
            child.ready = True
            child.state = "running"
            self._state_dirty = True
            log.info("worker.started", worker=child.name, pid=message[1])
        elif kind == "warm":
            child.warm = True
            self._state_dirty = True
            if child.role == "watcher":
                self.watching.set()  # stays set: a restarted watcher resumes from its journal
        elif kind == "stats":
            child.stats = message[1]
        elif kind in ("crashed", "boot_failed", DISK_FULL):
            child.last_error = message[1]
        elif kind == "stopped":
            child.state = "stopped"

    def _reap(self) -> None:
        for child in self.children.values():
            process = child.process
            if process is None or child.exitcode is not None or process.exitcode is None:
                continue
            process.join()
            self._drain(child)
            child.exitcode = process.exitcode
            self._state_dirty = True
            if self._stopping:
                child.state = "stopped"
                continue
            if not child.ready:
                child.state = "failed"
                self._boot_failure = self._boot_failure or child
                continue
            if process.exitcode == EXIT_DISK_FULL:
                self._out_of_room(child)
                continue
            child.state = "crashed"
            how = _describe_exit(process.exitcode)
            log.error(
                "worker.crashed",
                worker=child.name,
                pid=process.pid,
                exitcode=process.exitcode,
                cause=how,
                traceback=child.last_error,
            )
            self._blame(child, how)
            self._schedule_restart(child.group)

    def _out_of_room(self, child: _Child) -> None:
        """The index's disk is full: no session is to blame and nothing is lost (the child's
        work replays from its checkpoint). Restart it on the usual backoff, which tries again
        every ``restart_max_s`` at most, so indexing resumes by itself once there is room."""
        free = free_bytes(self.config.index_dir)
        log.error(
            "disk.full",
            worker=child.name,
            index_dir=str(self.config.index_dir),
            free_bytes=free,
            then="retrying with backoff until there is room",
        )
        self._schedule_restart(child.group)
        for peer in self.children.values():
            if peer.group == child.group:
                peer.state = DISK_FULL

    def _blame(self, child: _Child, how: str) -> None:
        """Count the death against the session the worker was on (pipeline.quarantine)."""
        crumb = child.breadcrumb.read() if child.breadcrumb is not None else None
        if crumb is None:
            return
        held = self.quarantine.crashed(crumb, how)
        log.warning("session.crashed_worker", worker=child.name, path=crumb[0], cause=how)
        if held is not None:
            log.error(
                "session.quarantined",
                path=held.path,
                crashes=held.crashes,
                cause=how,
                until="its file changes",
            )

    def _schedule_restart(self, group: str) -> None:
        state = self.groups[group]
        if state.restart_at is not None:
            return
        now = time.monotonic()
        if state.healthy_since is not None and now - state.healthy_since >= (
            self.settings.healthy_after_s
        ):
            state.failures = 0
        state.failures += 1
        state.healthy_since = None
        delay = min(
            self.settings.restart_max_s,
            self.settings.restart_min_s * 2 ** (state.failures - 1),
        )
        state.restart_at = now + delay
        for child in self.children.values():
            if child.group == group and child.exitcode is None and child.process is not None:
                # Its peers share a queue that may be torn: they restart too (crash-safe).
                child.process.kill()
                child.process.join()
                self._drain(child)
                child.exitcode = child.process.exitcode
                child.state = "restarting"
        for child in self.children.values():
            if child.group == group:
                child.state = "restarting"
        log.warning("worker.restarting", group=group, in_seconds=round(delay, 3))

    def _restart_due(self) -> None:
        now = time.monotonic()
        for name, state in self.groups.items():
            if state.restart_at is not None and now >= state.restart_at:
                for child in self.children.values():
                    if child.group == name:
                        child.restarts += 1
                        if child.conn is not None:
                            child.conn.close()
                            child.conn = None
                self._start_group(name)

    def _check_stalls(self) -> None:
        now = time.time()
        for child in self.children.values():
            if not (child.ready and child.exitcode is None and child.process is not None):
                continue
            silent = now - child.alive.value
            stuck = now - child.heartbeat.value
            if silent > self.settings.frozen_s or stuck > self.settings.stall_s:
                log.error(
                    "worker.stalled",
                    worker=child.name,
                    seconds=round(max(silent, stuck)),
                    cause="frozen" if silent > self.settings.frozen_s else "no progress",
                )
                child.process.kill()

    # -- stopping --------------------------------------------------------------------------

    def _shutdown(self, code: int) -> int:
        """Stop the watcher and workers, then the publisher (it publishes their last batch)."""
        self._stopping = True
        self.stop_work.set()
        for child in self.children.values():
            if child.state == "running":
                child.state = "stopping"
        self._write_state(force=True)
        workers = [c for c in self.children.values() if c.role != "publisher"]
        self._join(workers, self.settings.shutdown_s)
        self.stop_publisher.set()
        self._join([self.children["publisher"]], self.settings.shutdown_s)
        log.info("pipeline.stopped", code=code)
        return code

    def _join(self, children: list[_Child], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        for child in children:
            process = child.process
            if process is None or child.exitcode is not None:
                continue
            while process.exitcode is None and time.monotonic() < deadline:
                process.join(0.1)
                self._drain(child)
            if process.exitcode is None:
                log.warning("worker.killed", worker=child.name, reason="did not stop in time")
                process.kill()
                process.join()
            self._drain(child)
            child.exitcode = process.exitcode
            child.state = "stopped"

    def _kill_all(self) -> None:
        for child in self.children.values():
            process = child.process
            if process is not None and process.exitcode is None:
                process.kill()
                process.join()
            if child.conn is not None:
                child.conn.close()
                child.conn = None
        if self.results is not None:
            self.results.close()
            self.results.cancel_join_thread()

    # -- state for `pipeline status` -------------------------------------------------------

    def _write_state(self, *, force: bool = False, final: bool = False) -> None:
        now = time.monotonic()
        if not (force or final or self._state_dirty or now - self._state_at >= _STATE_EVERY_S):
            return
        if final:
            overall = "failed" if self._boot_failure is not None else "stopped"
        else:
            overall = "stopping" if self._stopping else "running"
        state = {
            "pid": os.getpid(),
            "state": overall,
            "startedAt": self._started_ns // 1_000_000,
            # every child up and warm now; when that was first so (this run's start-up time)
            "ready": overall == "running" and self._ready(),
            "readyAt": self._ready_ns // 1_000_000 if self._ready_ns is not None else None,
            "updatedAt": time.time_ns() // 1_000_000,
            "workers": self.settings.workers,
            "children": [
                {
                    "name": c.name,
                    "role": c.role,
                    "pid": c.process.pid if c.process is not None else None,
                    "state": c.state,
                    "restarts": c.restarts,
                    "startedAt": c.started_ns // 1_000_000 if c.started_ns else None,
                    "heartbeatAt": int(c.heartbeat.value * 1000) if c.heartbeat.value else None,
                    "aliveAt": int(c.alive.value * 1000) if c.alive.value else None,
                    "exitcode": c.exitcode,
                    "lastError": _last_line(c.last_error),
                    "stats": c.stats,
                }
                for c in self.children.values()
            ],
            "quarantined": [q.to_state() for q in self.quarantine.held().values()],
        }
        with contextlib.suppress(OSError):  # status is best effort; the index is not
            atomic_write(run_state_path(self.config.index_dir), jsonio.dumps(state))
        self._state_at = now
        self._state_dirty = False


def _describe_exit(code: int) -> str:
    return "could not start" if code == EXIT_BOOT else describe_exit(code)


def _last_line(text: str | None) -> str | None:
    if not text:
        return None
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else None


def _wakes_of(child: _Child, wakes: tuple[Any, ...]) -> tuple[Any, ...]:
    """The watcher wakes every index worker; a worker waits on its own semaphore."""
    if child.role == "watcher":
        return wakes
    if child.role == "index":
        return (wakes[child.worker_id],)
    return ()
