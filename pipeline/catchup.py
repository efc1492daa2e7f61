"""Catch-up (`pipeline run --once`, `pipeline rebuild`): the always-on pipeline, run to idle once.

::

    watcher: reconcile the roots with the published index ─► journal (every change, at once)
    index worker (one shard, this process): the whole backlog in one batch, tiered once
        whole builds ─► WorkerPool (worker processes when worth it) ─► SessionEngine
        appends, restamps, deletes, forgets, the archive ─► SessionEngine (as always-on)
        deltas a live run left ─► merged
    publisher: one generation, its lexicon complete (missing buckets built in the pool;
        from empty, each as soon as its sessions are: pipeline.early_lexicon)
        ─► publish checkpoint ─► collect garbage

An index another format or derivation wrote is derived again first (pipeline.upgrade): the
run is marked, and its one generation is published only when all of it is built (no partial
publish over the maxSync budgets), so a reader never sees a half-upgraded index.

So a backfill is a replay: the same watcher, journal, worker and publisher as `pipeline run`,
and the index it publishes is byte for byte the one the always-on pipeline converges to
(tests/unit/pipeline/test_one_write_path.py).
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import structlog

from pipeline.early_lexicon import EarlyBuckets
from pipeline.engine import DELETE, FORGET, Drop, Skip, policy_of
from pipeline.pool import WorkerPool
from pipeline.runner import InlineRunner, Mailbox
from pipeline.session_job import Job, JobResult
from pipeline.settings import RunSettings
from pipeline.upgrade import Upgrade, begin, detect, finish
from pipeline.workers import WorkerBatch
from store.config import Config
from store.errors import DiskFull, SchemaVersionError, SnapshotMissing
from store.journal import Journal
from store.layout import chunk_of
from store.reader import open_snapshot
from store.reasons import DISK_FULL, MAX_SYNC_SESSIONS, MAX_SYNC_SOURCE_BYTES
from store.records import SessionState
from store.writer import StoreWriter

__all__ = ["RunReport", "catch_up", "tty_progress"]

log = structlog.get_logger()

# Below this much source to build, worker processes (forked, then fed over pipes) cost more
# than they save.
INLINE_BYTES = 8 * 1024 * 1024

Progress = Callable[[int, int, int, int], None]  # done, total, bytes done, bytes total


@dataclass(slots=True)
class RunReport:
    """What one catch-up run did."""

    eligible: int = 0
    reused: int = 0
    indexed: int = 0
    failed: int = 0
    removed: int = 0
    archived: int = 0  # sessions whose source is gone, kept from the archive
    forgotten: int = 0  # sessions purged: forgotten or excluded
    source_bytes_read: int = 0
    bytes_written: int = 0
    generations: list[int] = field(default_factory=list)
    errors: list[tuple[str, str]] = field(default_factory=list)
    seconds: float = 0.0
    # why the whole index was derived again (pipeline.upgrade), or None
    upgrade: Upgrade | None = None

    def as_dict(self) -> dict[str, object]:
        return {
            "eligible": self.eligible,
            "reused": self.reused,
            "indexed": self.indexed,
            "failed": self.failed,
            "removed": self.removed,
            "archived": self.archived,
            "forgotten": self.forgotten,
            "sourceBytesRead": self.source_bytes_read,
            "bytesWritten": self.bytes_written,
            "generations": list(self.generations),
            "seconds": round(self.seconds, 3),
            "upgrade": None
            if self.upgrade is None
            else {"reason": self.upgrade.reason, "detail": self.upgrade.detail},
        }


class _Tally(Mailbox):
    """The runner's mailbox, counting what the worker hands over for the report."""

    def __init__(self, report: RunReport) -> None:
        super().__init__()
        self.report = report

    def put(self, batch: WorkerBatch) -> None:
        for change in batch.changes:
            if isinstance(change, Skip):
                self.report.failed += 1
            elif isinstance(change, Drop) and change.purge:
                self.report.forgotten += 1
        super().put(batch)


class _Chunks:
    """From empty, the chunk records of the manifest to publish (``StoreWriter.stage_chunks``),
    each written as soon as every session of the backlog it holds is built, while the pool
    builds the rest: the publish after the last build finds them written.

    A guess, as the early buckets are: the rows are the states the builds made, and a chunk
    whose rows the publish finds different (a session that failed and was built again in this
    process, a version the archive brought back) is written then, this one left as garbage.
    """

    def __init__(self, writer: StoreWriter, jobs: Sequence[Job]) -> None:
        self.writer = writer
        self._chunk = {j.path: chunk_of(j.path) for j in jobs}  # the jobs not built yet
        self._left = Counter(self._chunk.values())
        self._rows: dict[int, list[SessionState]] = {}

    def built(self, result: JobResult) -> None:
        k = self._chunk.pop(result.path, None)
        if k is None:
            return
        if result.state is not None:
            self._rows.setdefault(k, []).append(result.state)
        self._left[k] -= 1
        if not self._left[k]:
            del self._left[k]
            self.writer.stage_chunks(self._rows.pop(k, []))


class _Builds:
    """Whole builds of the backlog in the pool; counts them and shows progress."""

    def __init__(
        self, pool: WorkerPool, report: RunReport, progress: Progress | None, writer: StoreWriter
    ) -> None:
        self.pool, self.report, self.progress, self.writer = pool, report, progress, writer
        # whether a batch of jobs is the whole backlog of an empty index (set by catch_up)
        self.from_empty: Callable[[Sequence[Job]], bool] = lambda jobs: False
        self.early: EarlyBuckets | None = None  # the lexicon buckets built meanwhile

    def __call__(self, jobs: Sequence[Job], sizes: Mapping[str, int]) -> Iterator[JobResult]:
        total = sum(sizes.values())
        self.pool.inline = total < INLINE_BYTES
        early = chunks = None
        if self.early is None and not self.pool.inline and self.from_empty(jobs):
            early = self.early = EarlyBuckets(self.pool, Path(jobs[0].index_dir), jobs, sizes)
            chunks = _Chunks(self.writer, jobs)
        if early is not None:
            ordered = early.order(jobs, sizes)
        else:
            # Biggest first keeps the pool busy to the end instead of waiting on a straggler.
            ordered = sorted(jobs, key=lambda j: (-sizes[j.path], j.path))
        done_bytes = 0
        for done, result in enumerate(self.pool.index(ordered, sizes), 1):
            if early is not None:
                early.built(result)
            if chunks is not None and not (result.retired or result.dropped):
                chunks.built(result)
            if result.reason == DISK_FULL:
                # Publishing needs room too: stop, keep what is published, say where.
                raise DiskFull(Path(ordered[0].index_dir))
            done_bytes += sizes[result.path]
            self.report.source_bytes_read += result.source_bytes
            self.report.bytes_written += result.bytes_written
            if result.error:
                self.report.errors.append((result.path, result.error))
            if self.progress is not None:
                self.progress(done, len(ordered), done_bytes, total)
            yield result


def _previous(index_dir: Path) -> dict[str, SessionState]:
    try:
        return {s.path: s for s in open_snapshot(index_dir).manifest.sessions}
    except (SnapshotMissing, SchemaVersionError):
        return {}


def catch_up(
    config: Config,
    *,
    processes: int | None = None,
    progress: Progress | None = None,
    now_ns: Callable[[], int] = time.time_ns,
    collect_now: bool = False,
) -> RunReport:
    """Bring the published index up to date with the session files, then stop.

    *collect_now*: keep no older generation (nor its records) past this one, at once
    (`pipeline forget`: forgetting means now)."""
    started = time.perf_counter()
    report = RunReport()
    log.info("index.started", index_dir=str(config.index_dir))
    upgrade = detect(config.index_dir, policy_of(config).fingerprint())
    report.upgrade = upgrade
    if upgrade is not None:
        with StoreWriter(config.index_dir).lock():
            begin(config.index_dir, upgrade)
    before = _previous(config.index_dir)
    # The backlog in batches within the maxSync budgets (each batch's whole builds go to the
    # pool together); no backpressure, and no publish but one per batch.
    memory = config.memory
    settings = replace(
        RunSettings(),
        batch_events=memory.max_sync_sessions,
        batch_bytes=memory.max_sync_source_bytes,
        max_pending_events=sys.maxsize,
    )
    clock = time.monotonic
    with WorkerPool(processes, inline=True, prepare=lambda: _warm(config)) as pool:
        mailbox = _Tally(report)
        writer = StoreWriter(config.index_dir)
        builds = _Builds(pool, report, progress, writer)
        # every new file is built whole, read and hashed by its build: the watcher only
        # stats it (pipeline.classify)
        runner = InlineRunner(
            config,
            settings,
            mailbox=mailbox,
            builder=builds,
            now_ns=now_ns,
            hash_new=False,
            writer=writer,
        )
        # The cold set the publisher plans is the backlog's cold jobs when the index is
        # empty and the batch holds every eligible file (pipeline.early_lexicon).
        builds.from_empty = lambda jobs: (
            upgrade is None
            and not runner.publisher.sessions
            and len(jobs) == len(runner.watcher.view)
        )
        try:
            with runner.writer.lock():
                runner.publisher.boot(clock())
                runner.watcher.boot()
                while runner.watcher.loop_once(clock()):
                    pass
                worker = runner.worker
                worker.boot()
                worker.scrub_turn()  # damaged records of unchanged sessions (pipeline.scrub)
                handled = worker.events
                while worker.loop_once(clock()):
                    batch, handled = worker.events - handled, worker.events
                    pending = _pending(runner.journal, worker.position) if batch else []
                    if pending and upgrade is None:
                        # over budget: publish what is done, name what is not
                        reason = (
                            MAX_SYNC_SESSIONS
                            if batch >= memory.max_sync_sessions
                            else MAX_SYNC_SOURCE_BYTES
                        )
                        runner.publisher.publish_pending(clock(), pending, reason)
                        report.generations.append(runner.writer.current_generation())
                worker.fold_deltas()

                def segments(todo: list[tuple[str, ...]]) -> list[str]:
                    # While worker processes build the buckets, the chunk records of the
                    # manifest about to be published are written here (store.writer): the
                    # publish finds them, instead of writing them after the last bucket.
                    def meanwhile() -> None:
                        runner.writer.stage_chunks(runner.publisher.sessions.values())

                    return _segments(pool, config.index_dir, todo, report, builds.early, meanwhile)

                generation = runner.publisher.finish(clock(), segments, first=True)
                pool.close()
                worker.flush(clock())
                if collect_now:
                    runner.writer.collect_garbage(keep_generations=1, grace_seconds=0)
                else:
                    runner.writer.collect_garbage()
        finally:
            runner.journal.close()
    after = runner.publisher.sessions
    report.eligible = len(runner.watcher.view)
    # built this run: its records are new (a restamp or a session kept as is writes none)
    report.indexed = sum(1 for p, s in after.items() if _records(before.get(p)) != _records(s))
    report.reused = sum(1 for p, s in after.items() if before.get(p) == s)
    report.removed = sum(1 for p in before if p not in after)
    report.archived = sum(1 for s in after.values() if s.archived)
    report.bytes_written += sum(runner.written().values())
    if generation is not None:
        report.generations.append(generation)
    if upgrade is not None:
        finish(config.index_dir, generation)
    report.seconds = time.perf_counter() - started
    log.info("index.done", **report.as_dict())
    return report


def _warm(config: Config) -> None:
    """What every worker would load on its first session: loaded once, here, before they
    are forked (``pipeline.pool``)."""
    from pipeline.preload import warm  # only a run that starts workers needs it

    warm(policy_of(config))


def _pending(journal: Journal, after: int) -> list[tuple[str, str]]:
    """(path, agent) of the events after *after* (deletes and forgets not: nothing to wait
    for)."""
    out: dict[str, tuple[str, str]] = {}
    while events := journal.read(after, limit=4096):
        for e in events:
            if e.kind in (DELETE, FORGET):
                out.pop(e.path, None)
            else:
                out[e.path] = (e.path, e.agent)
        after = events[-1].position
    return list(out.values())


def _records(state: SessionState | None) -> tuple[str, ...]:
    return () if state is None else (state.index_record, state.entries_record)


def _segments(
    pool: WorkerPool,
    index_dir: Path,
    todo: list[tuple[str, ...]],
    report: RunReport,
    early: EarlyBuckets | None,
    meanwhile: Callable[[], None] = lambda: None,
) -> list[str]:
    """The segment of each bucket of *todo*, in order; *meanwhile* runs here while worker
    processes build them (when none does, before they are built in this process)."""
    # in worker processes when the sessions were built in them (the pool is up already);
    # a bucket built while the backlog's last sessions were indexed is taken as it is
    handles = {b: h for b in todo if early is not None and (h := early.take(b)) is not None}
    rest = [b for b in todo if b not in handles]
    if pool.running or len(rest) > 1:
        handles.update((b, h) for b in rest if (h := pool.submit_bucket(index_dir, b)) is not None)
        rest = [b for b in rest if b not in handles]
    meanwhile()
    built = dict(zip(rest, pool.build_buckets(index_dir, rest), strict=True))
    built.update((b, h.get()) for b, h in handles.items())
    report.bytes_written += sum(size for _, size in built.values())
    return [built[b][0] for b in todo]


def tty_progress(stream: object = sys.stderr) -> Progress | None:
    """A one-line progress bar on a terminal; None (quiet) otherwise."""
    isatty = getattr(stream, "isatty", None)
    if not (callable(isatty) and isatty()):
        return None
    write = stream.write  # type: ignore[attr-defined]
    flush = stream.flush  # type: ignore[attr-defined]

    def show(done: int, total: int, done_bytes: int, total_bytes: int) -> None:
        width = 30
        filled = width * done // max(total, 1)
        write(
            f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} sessions "
            f"{done_bytes / 1e6:.1f}/{total_bytes / 1e6:.1f} MB"
        )
        if done == total:
            write("\n")
        flush()

    return show
