"""The catch-up run's worker processes: started once, used for every batch and the lexicon.

A run starts its workers at the first work worth it and keeps them for every batch of
sessions and then for the cold lexicon's buckets. Small runs start none: the work is done in
this process. Workers are forked from this process (``pipeline.forked``), after it warmed
what they use (*prepare*, e.g. ``pipeline.preload.warm``): a worker then costs a fork, not
an interpreter importing every module and compiling the credential rules again (issue 14).
A process with other threads running spawns them instead (a fork copies locks those threads
hold), as the publisher's background lexicon builds do beside their heartbeat thread.

::

    parent: tasks (FIFO; a retry, or a bucket sent ahead, goes first) ─► an idle worker,
            over its own pipe
            wait(every busy worker's pipe and process sentinel)
              a result          ─► the task is done; the worker takes the next one
              the process ended ─► "died": a replacement is started, and
                  each of its sessions          ─► again, alone, first in line; a session
                                                   present at a second death is skipped
                                                   (index_error)
                  a lexicon bucket              ─► built once more, then WorkerDied

A worker that dies (killed by the kernel for memory, a crash in native code, a kill -9)
takes only its own message with it. ``multiprocessing.Pool`` replaces a dead worker but never
reports its task, so a run waited for it forever.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Final

import structlog

from pipeline.exits import describe_exit
from pipeline.forked import Forked, forkable
from pipeline.lexicon import build_bucket
from pipeline.session_job import Job, JobResult, index_session, index_sessions
from store.errors import DiskFull, is_disk_full
from store.reasons import INDEX_ERROR

__all__ = [
    "UNITS_PER_WORKER",
    "BackgroundBuilds",
    "BucketHandle",
    "TaskFailed",
    "WorkerDied",
    "WorkerPool",
]

log = structlog.get_logger()

# Pool messages per worker, at least: the last one bounds how long a worker runs on alone.
UNITS_PER_WORKER: Final = 32
# Workers that die before they are up, one after another: past this they cannot run at all
# (a broken installation), and the run stops instead of respawning them.
_DEAD_ON_ARRIVAL: Final = 3
_BUCKET_ATTEMPTS: Final = 2
# Worker deaths a session may be present at before it is skipped as index_error: one death
# alone may have been a kill from outside; a session that kills its worker does so again.
_SESSION_DEATHS: Final = 2
_STOP_WAIT_S: Final = 5.0
_READY: Final = "ready"
# Tasks sent to a worker ahead of its answers: the next one is waiting in its pipe when it
# finishes, instead of a round trip through the parent later.
_SENT_PER_WORKER: Final = 2
# The smallest run of sessions in one message, as a fraction of the usual: the last ones.
_LAST_UNITS: Final = 8


class WorkerDied(Exception):
    """Worker processes died running work that cannot be skipped (a lexicon bucket), or
    died before doing any work at all."""


class TaskFailed(Exception):
    """A task raised in its worker process; the message holds the worker's traceback."""


def _serve(conn: Any) -> None:
    """A worker's loop: say it is up, then run each (function, args) it is sent and answer
    (ok, value or traceback)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the group; the parent decides
    conn.send(_READY)
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return  # the parent is gone
        if message is None:
            return
        fn, args = message
        try:
            answer: tuple[bool, Any] = (True, fn(*args))
        except Exception as exc:  # noqa: BLE001 - the parent raises it as TaskFailed
            # A full disk is said apart: the parent raises DiskFull, which names the folder.
            answer = (False, (traceback.format_exc(), is_disk_full(exc)))
        conn.send(answer)


@dataclass(eq=False)
class _Task:
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    on_died: Callable[[_Task, str], None]
    on_done: Callable[[Any], None] | None = None
    on_failed: Callable[[_Task, str], None] | None = None  # it raised: the traceback
    settled: bool = False
    value: Any = None
    error: BaseException | None = None
    deaths: int = 0


@dataclass(eq=False)
class _Worker:
    process: Any
    conn: Any
    tasks: deque[_Task] = field(default_factory=deque)  # sent, oldest (the running one) first
    up: bool = False


@dataclass(eq=False)
class BucketHandle:
    """A lexicon bucket handed to the pool; ``get()`` runs the pool until it is built."""

    pool: WorkerPool
    task: _Task = field(repr=False)

    def wait(self, timeout: float | None) -> bool:
        """Run the pool until the bucket is built or failed, or *timeout* seconds passed
        (None: no limit); True when it is settled."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.task.settled:
            # At least one step, even with no time left: it hands the task to a worker and
            # collects an answer already there.
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not self.pool.step(left) and not self.task.settled:
                raise WorkerDied("the pool was closed before the bucket was built")
            if left == 0.0 and not self.task.settled:
                return False
        return True

    def get(self) -> tuple[str, int]:
        """(segment name, bytes written). Raises WorkerDied or TaskFailed."""
        self.wait(None)
        if self.task.error is not None:
            raise self.task.error
        value: tuple[str, int] = self.task.value
        return value


IndexUnit = Callable[[Sequence[Job]], list[JobResult]]
BuildBucket = Callable[[str, tuple[str, ...]], tuple[str, int]]


class WorkerPool:
    """Index jobs and lexicon buckets, in worker processes unless *inline*.

    *index_unit* and *build_bucket* are what a worker runs for one message of jobs and for
    one bucket (module-level functions: a spawned worker imports them by name). *prepare*
    runs once in this process before its first worker is forked: what it warms, every
    worker has.
    """

    def __init__(
        self,
        processes: int | None,
        inline: bool,
        *,
        index_unit: IndexUnit = index_sessions,
        build_bucket: BuildBucket = build_bucket,
        prepare: Callable[[], None] | None = None,
    ) -> None:
        self.workers = max(1, processes or os.cpu_count() or 1)
        self.inline = inline
        self.index_unit = index_unit
        self.build_bucket = build_bucket
        self._prepare = prepare
        self._ctx: Any = None
        self._running: list[_Worker] = []
        self._queue: deque[_Task] = deque()
        # tasks handed out before any queued one: lexicon buckets built while jobs still run
        self._ahead: deque[_Task] = deque()
        self._dead_on_arrival = 0

    @property
    def running(self) -> bool:
        """True once worker processes are started (and until ``close``)."""
        return bool(self._running)

    # -- work -------------------------------------------------------------------------------

    def index(self, jobs: Sequence[Job], sizes: Mapping[str, int]) -> Iterator[JobResult]:
        """Every job's result, in the order they finish; a job whose worker died on it alone
        is an ``index_error`` result."""
        if self.inline or not jobs:
            # (One big session goes to a worker too: if it is what exhausts memory, the
            # kernel then kills the worker, not the run.)
            yield from map(index_session, jobs)
            return
        finished: deque[JobResult] = deque()
        left = len(jobs)
        deaths: dict[str, int] = {}  # worker deaths each session was present at

        def submit(unit: list[Job], *, first: bool = False) -> None:
            task = _Task(self.index_unit, (unit,), died, finished.extend, failed)
            if first:
                self._queue.appendleft(task)
            else:
                self._queue.append(task)

        def died(task: _Task, how: str) -> None:
            (unit,) = task.args
            for job in unit:
                deaths[job.path] = deaths.get(job.path, 0) + 1
            # Which session killed it is unknown, and a kill from outside (an operator, the
            # OOM killer choosing this process for another's memory) is no session's fault:
            # each goes again, alone, first in line, until one has been present at two deaths.
            again = [job for job in unit if deaths[job.path] < _SESSION_DEATHS]
            for job in reversed(again):
                submit([job], first=True)
            for job in unit:
                if deaths[job.path] >= _SESSION_DEATHS:
                    skip(job, how)

        def skip(job: Job, how: str) -> None:
            log.error("session.failed", path=job.path, error=f"worker process {how}")
            finished.append(
                JobResult(
                    job.path,
                    job.agent,
                    None,
                    0,
                    0,
                    reason=INDEX_ERROR,
                    error=f"the worker process indexing this session {how}",
                )
            )

        def failed(task: _Task, error: str) -> None:
            # index_sessions never raises; a unit that did fails each of its sessions
            (unit,) = task.args
            finished.extend(
                JobResult(job.path, job.agent, None, 0, 0, reason=INDEX_ERROR, error=error)
                for job in unit
            )

        for unit in _units(jobs, sizes, self.workers):
            submit(unit)
        while left:
            while not finished:
                if not self.step():
                    raise WorkerDied(f"{left} sessions were handed out and never answered")
            left -= 1
            yield finished.popleft()

    def build_buckets(
        self, index_dir: Path, buckets: Sequence[tuple[str, ...]]
    ) -> list[tuple[str, int]]:
        """(segment name, bytes written) of each bucket, in order."""
        if self.inline or len(buckets) <= 1:
            return [build_bucket(str(index_dir), bucket) for bucket in buckets]
        handles = [self._bucket(index_dir, bucket) for bucket in buckets]
        return [h.get() for h in handles]

    def submit_bucket(
        self, index_dir: Path, bucket: tuple[str, ...], *, ahead: bool = False
    ) -> BucketHandle | None:
        """Start building one bucket while jobs still run (None when this pool is inline);
        *ahead*: before the jobs still queued (behind the buckets queued so before it)."""
        if self.inline:
            return None
        return self._bucket(index_dir, bucket, ahead=ahead)

    def _bucket(
        self, index_dir: Path, bucket: tuple[str, ...], *, ahead: bool = False
    ) -> BucketHandle:
        def died(dead: _Task, how: str) -> None:
            if dead.deaths < _BUCKET_ATTEMPTS:
                self._queue.appendleft(dead)
                return
            dead.error = WorkerDied(
                f"a worker process {how} building a lexicon bucket of {len(bucket)} digests, "
                f"{dead.deaths} times"
            )
            dead.settled = True

        task = _Task(self.build_bucket, (str(index_dir), bucket), died)
        (self._ahead if ahead else self._queue).append(task)
        return BucketHandle(self, task)

    # -- the processes ----------------------------------------------------------------------

    def step(self, timeout: float | None = None) -> bool:
        """Hand queued tasks to idle workers, then wait until at least one busy worker
        answers or dies (or *timeout* seconds pass), and settle what happened. False when
        no task was running or queued."""
        self._dispatch()
        busy = [w for w in self._running if w.tasks]
        if not busy:
            return False
        from multiprocessing.connection import wait  # any object with a fileno(), or an fd

        waitables = [w.conn for w in busy] + [w.process.sentinel for w in busy]
        ready = set(wait(waitables, timeout))
        for worker in busy:
            if worker.conn in ready or worker.process.sentinel in ready:
                self._settle(worker)
        return True

    def _dispatch(self) -> None:
        if not self._queue and not self._ahead:
            return
        if not self._running:
            for _ in range(self.workers):
                self._running.append(self._start())
        for worker in list(self._running):
            if not worker.tasks and not worker.process.is_alive():
                worker = self._bury(worker)  # it died idle: only its replacement gets work
            while len(worker.tasks) < _SENT_PER_WORKER and (self._ahead or self._queue):
                task = (self._ahead or self._queue).popleft()
                try:
                    worker.conn.send((task.fn, task.args))
                except OSError:  # it just died: its sentinel says so at the next wait
                    self._queue.appendleft(task)
                    break
                worker.tasks.append(task)

    def _start(self) -> _Worker:
        if forkable():
            if self._prepare is not None:
                prepare, self._prepare = self._prepare, None
                prepare()
            process = Forked(_serve)  # looked up now: tests replace it
            return _Worker(process, process.conn)
        if self._ctx is None:
            import multiprocess  # deferred: spawning costs nothing until there is real work

            self._ctx = multiprocess.get_context("spawn")
        parent, child = self._ctx.Pipe()
        process = self._ctx.Process(target=_serve, args=(child,), daemon=True)
        process.start()
        child.close()
        return _Worker(process, parent)

    def _settle(self, worker: _Worker) -> None:
        answer: Any = None
        with contextlib.suppress(EOFError, OSError):
            if worker.conn.poll():
                answer = worker.conn.recv()
        if answer is None:
            if worker.process.is_alive():
                return  # woken by a partial message: the rest follows
            self._bury(worker)
            return
        if answer == _READY:
            worker.up = True
            self._dead_on_arrival = 0
            return
        task = worker.tasks.popleft()
        ok, value = answer
        if ok:
            task.value = value
            if task.on_done is not None:
                task.on_done(value)
        else:
            trace, disk_full = value
            if disk_full and task.on_failed is None:  # a bucket: (index_dir, digests)
                task.error = DiskFull(task.args[0])
            elif task.on_failed is not None:
                task.on_failed(task, trace)
            else:
                task.error = TaskFailed(f"{task.fn.__name__} failed in a worker process:\n{trace}")
        task.settled = True

    def _bury(self, worker: _Worker) -> _Worker:
        """*worker* died: tell the task it was running, if any (the ones sent after it never
        started and go first in line again), and return its replacement."""
        task = worker.tasks.popleft() if worker.tasks else None
        self._queue.extendleft(reversed(worker.tasks))
        worker.process.join()
        how = describe_exit(worker.process.exitcode)
        worker.conn.close()
        worker.process.close()
        self._running.remove(worker)
        if not worker.up:
            # It died starting: its task is not to blame and goes first again.
            self._dead_on_arrival += 1
            if task is not None:
                self._queue.appendleft(task)
            self._check_starting(how)
        else:
            name = task.fn.__name__ if task is not None else None
            log.warning("worker.crashed", pid=worker.process.pid, how=how, task=name)
            if task is not None:
                task.deaths += 1
                task.on_died(task, how)
        replacement = self._start()
        self._running.append(replacement)
        return replacement

    def _check_starting(self, how: str) -> None:
        if self._dead_on_arrival:
            log.warning("worker.boot_failed", how=how, in_a_row=self._dead_on_arrival)
        if self._dead_on_arrival >= _DEAD_ON_ARRIVAL:
            raise WorkerDied(f"worker processes die as they start (the last {how})")

    def close(self) -> None:
        """Let every worker finish and exit (those that do not within a few seconds are
        terminated)."""
        running, self._running = self._running, []
        for worker in running:
            with contextlib.suppress(OSError):
                worker.conn.send(None)
        for worker in running:
            worker.process.join(_STOP_WAIT_S)
            if worker.process.exitcode is None:
                worker.process.terminate()
                worker.process.join()
            worker.conn.close()
            worker.process.close()
        self._queue.clear()
        self._ahead.clear()

    def terminate(self) -> None:
        for worker in self._running:
            if worker.process.exitcode is None:
                worker.process.terminate()
        self.close()

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc is not None:
            self.terminate()
        else:
            self.close()


class BackgroundBuilds:
    """One worker process building lexicon buckets while the publisher keeps publishing.

    A bucket of a large cold tier takes a good part of a second to build; built in the
    publisher's own loop it would hold back every append waiting to be published. A build
    whose worker died twice (or that raised) is dropped with ``lexicon.failed``; its bucket's
    digests answer from their own vocabularies meanwhile, and ``due`` offers the bucket again
    after a pause that doubles with each failure in a row (``RETRY_FIRST_S`` up to
    ``RETRY_MAX_S``), so a bucket that cannot be built is neither forgotten nor rebuilt in a
    loop.
    """

    RETRY_FIRST_S: Final = 30.0
    RETRY_MAX_S: Final = 1800.0

    def __init__(
        self,
        index_dir: Path,
        *,
        build_bucket: BuildBucket = build_bucket,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.index_dir = Path(index_dir)
        self._pool = WorkerPool(1, inline=False, build_bucket=build_bucket)
        self._clock = clock
        self._running: BucketHandle | None = None
        self.building: tuple[str, ...] | None = None  # the bucket being built
        self._failed: tuple[str, ...] | None = None
        self._failures = 0
        self._retry_at = 0.0

    @property
    def busy(self) -> bool:
        return self._running is not None

    def submit(self, digests: tuple[str, ...]) -> None:
        self._running = self._pool.submit_bucket(self.index_dir, digests)
        self.building = digests
        if digests == self._failed:
            self._failed = None

    def poll(self, timeout: float | None = 0.0) -> str | None:
        """The segment just built once the running build has finished, else None (a None
        *timeout* waits for it)."""
        running, bucket = self._running, self.building
        if running is None:
            return None
        try:
            if not running.wait(timeout):
                return None
            self._running = self.building = None
            name, _ = running.get()
        except (WorkerDied, TaskFailed, DiskFull) as exc:  # a full disk: retried the same way
            self._running = self.building = None
            self._failures += 1
            pause = min(self.RETRY_MAX_S, self.RETRY_FIRST_S * 2 ** (self._failures - 1))
            self._failed, self._retry_at = bucket, self._clock() + pause
            log.error("lexicon.failed", error=str(exc), retry_in_s=pause)
            return None
        self._failures = 0
        return name

    def due(self) -> tuple[str, ...] | None:
        """The bucket whose build failed, once its pause is over (then it is forgotten: the
        caller submits it or finds it planned away)."""
        if self._failed is None or self._clock() < self._retry_at:
            return None
        bucket, self._failed = self._failed, None
        return bucket

    def close(self) -> None:
        self._pool.terminate()
        self._running = self.building = None


def _units(jobs: Sequence[Job], sizes: Mapping[str, int], workers: int) -> list[list[Job]]:
    """*jobs* (biggest first) in runs of consecutive jobs, one pool message each.

    The parent wakes for every result message, taking CPU from the workers, and each message
    makes its records durable in one round of fsyncs, so small sessions go several to a
    message. A run holds up to 1/``UNITS_PER_WORKER`` of a worker's share of the source bytes:
    a big session is a message of its own. Towards the end runs get smaller (half of each
    worker's share of what is left, down to 1/8 of the cap): the last messages end close
    together instead of one worker running on alone with a full run while the others are done.
    """
    left = sum(sizes[j.path] for j in jobs)
    cap = max(1, left // (workers * UNITS_PER_WORKER))
    floor = max(1, cap // _LAST_UNITS)
    units: list[list[Job]] = []
    unit: list[Job] = []
    used = 0
    limit = cap
    for job in jobs:
        size = sizes[job.path]
        if unit and used + size > limit:
            units.append(unit)
            unit, used = [], 0
        if not unit:
            limit = min(cap, max(floor, left // (2 * workers)))
        unit.append(job)
        used += size
        left -= size
    if unit:
        units.append(unit)
    return units
