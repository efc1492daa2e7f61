"""Catch-up indexing: make the published index match the session files, then stop.

::

    discover roots ─► stamps ─► tier (global, by mtime) ─► compare with CURRENT's manifest
        unchanged (same stamp, tier, policy) ─► reuse its SessionState as is
        changed / new / re-tiered ───────────► worker processes: session_job.index_session
        gone ─────────────────────────────────► dropped
    ─► publish generation N+1 (only when something differs) ─► collect garbage

Work is done in batches bounded by ``maxSyncSessions`` and ``maxSyncSourceBytes``; each batch
publishes a generation, and a generation published while work is still pending names the
pending sessions (``skipped`` with the budget reason) so readers report coverage honestly.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import structlog

from pipeline import scrub
from pipeline.archiving import ArchiveSettings, archive_of, begins_with, keeper, usable
from pipeline.discovery import Candidate, discover, source_specs, under
from pipeline.keepout import KeepOut
from pipeline.lexicon import LexiconKeeper, bucket_count, bucket_of
from pipeline.pool import WorkerPool
from pipeline.session_job import Job, waits_to_settle
from stages.policy import Policy
from stages.tier import COLD, HOT, assign_tiers
from store.archive import ARCHIVED, KEPT, key_name
from store.archive_writer import ArchiveWriter
from store.config import Config
from store.errors import CorruptRecord, DiskFull, SnapshotMissing
from store.reader import open_snapshot
from store.reasons import (
    DISK_FULL,
    INDEX_ERROR,
    MAX_SYNC_SESSIONS,
    MAX_SYNC_SOURCE_BYTES,
    SOURCE_UNREADABLE,
)
from store.records import Manifest, SessionState, SkippedFile
from store.writer import StoreWriter

__all__ = ["RunReport", "build_index", "policy_of"]

log = structlog.get_logger()

# Below this much source, spawning worker processes costs more than it saves.
INLINE_BYTES = 8 * 1024 * 1024

Progress = Callable[[int, int, int, int], None]  # done, total, bytes done, bytes total


def policy_of(config: Config) -> Policy:
    m = config.memory
    return Policy(
        max_entry_chars=m.max_entry_chars,
        index_thinking=m.index_thinking,
        index_tool_output=m.index_tool_output,
        max_cold_vocabulary_bytes=m.max_cold_vocabulary_bytes,
        max_cold_cache_bytes=m.max_cold_cache_bytes,
        redact=config.privacy.redact,
        redact_disabled=config.privacy.disabled_rules,
    )


@dataclass(slots=True)
class RunReport:
    """What one catch-up run did."""

    eligible: int = 0
    reused: int = 0
    # unchanged sessions built again all the same: deltas to fold, a last line settled, or
    # records the scrub found damaged
    rebuilt: int = 0
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

    def as_dict(self) -> dict[str, object]:
        return {
            "eligible": self.eligible,
            "reused": self.reused,
            "rebuilt": self.rebuilt,
            "indexed": self.indexed,
            "failed": self.failed,
            "removed": self.removed,
            "archived": self.archived,
            "forgotten": self.forgotten,
            "sourceBytesRead": self.source_bytes_read,
            "bytesWritten": self.bytes_written,
            "generations": list(self.generations),
            "seconds": round(self.seconds, 3),
        }


def _previous(index_dir: Path, policy: str) -> tuple[Manifest | None, dict[str, SessionState]]:
    try:
        manifest = open_snapshot(index_dir).manifest
    except SnapshotMissing:
        return None, {}
    if manifest.policy != policy:
        return manifest, {}
    return manifest, {s.path: s for s in manifest.sessions}


def _batches(
    jobs: Sequence[Job], sizes: dict[str, int], max_sessions: int, max_bytes: int
) -> Iterator[list[Job]]:
    batch: list[Job] = []
    used = 0
    for job in jobs:
        size = sizes[job.path]
        if batch and (len(batch) >= max_sessions or used + size > max_bytes):
            yield batch
            batch, used = [], 0
        batch.append(job)
        used += size
    if batch:
        yield batch


class _EarlyBuckets:
    """Lexicon buckets started while the run still indexes other buckets' sessions.

    A session's bucket is fixed by its path, so the cold jobs go bucket by bucket and a
    bucket is handed to the pool as soon as its last session is indexed; its build then
    overlaps the indexing of the next ones instead of waiting for the whole run. Only the
    bucket the publish asks for is used: if failures changed the buckets, the plan simply
    builds the ones it needs then.
    """

    def __init__(
        self,
        pool: WorkerPool,
        index_dir: Path,
        jobs: Sequence[Job],
        reused: Sequence[SessionState],
        report: RunReport,
    ) -> None:
        self.pool, self.index_dir, self.report = pool, index_dir, report
        cold_jobs = [j for j in jobs if j.tier != HOT]
        reused_cold = [s for s in reused if s.tier != HOT]
        self.count = bucket_count(len(cold_jobs) + len(reused_cold))
        self.left: dict[int, int] = {}
        self.names: dict[int, list[str]] = {}
        for j in cold_jobs:
            k = bucket_of(j.path, self.count)
            self.left[k] = self.left.get(k, 0) + 1
        for st in reused_cold:
            self.names.setdefault(bucket_of(st.path, self.count), []).append(st.index_record)
        self.started: dict[tuple[str, ...], Any] = {}

    def order(self, jobs: list[Job]) -> list[Job]:
        """Hot jobs first, then the cold ones bucket by bucket (each biggest first)."""
        return sorted(
            jobs,
            key=lambda j: (j.tier != HOT, -1 if j.tier == HOT else bucket_of(j.path, self.count)),
        )

    def done(self, job: Job, state: SessionState | None) -> None:
        k = bucket_of(job.path, self.count)
        if job.tier == HOT or k not in self.left:
            return  # hot, or a run of several batches: buckets are built at each publish
        if state is not None:
            self.names.setdefault(k, []).append(state.index_record)
        self.left[k] -= 1
        if self.left[k] == 0:
            bucket = tuple(sorted(self.names.get(k, ())))
            handle = self.pool.submit_bucket(self.index_dir, bucket) if bucket else None
            if handle is not None:
                self.started[bucket] = handle

    def build(self, buckets: list[tuple[str, ...]]) -> list[str]:
        rest = [b for b in buckets if b not in self.started]
        built = dict(zip(rest, self.pool.build_buckets(self.index_dir, rest), strict=True))
        for b in buckets:
            if b in self.started:
                built[b] = self.started.pop(b).get()
        self.report.bytes_written += sum(built[b][1] for b in buckets)
        return [built[b][0] for b in buckets]


def build_index(
    config: Config,
    *,
    processes: int | None = None,
    progress: Progress | None = None,
    now_ns: Callable[[], int] = time.time_ns,
) -> RunReport:
    """Index every session under the configured roots and publish; see the module doc."""
    started = time.perf_counter()
    policy = policy_of(config)
    fingerprint = policy.fingerprint()
    writer = StoreWriter(config.index_dir)
    report = RunReport()
    log.info("index.started", index_dir=str(config.index_dir))
    with writer.lock(), contextlib.ExitStack() as stack:
        previous, prior = _previous(config.index_dir, fingerprint)
        archive = archive_of(config)
        keep_out = KeepOut(config)
        candidates, problems = discover(config.roots)
        candidates = keep_out.keep(candidates)
        report.eligible = len(candidates) + len(problems)
        tiers = assign_tiers(((c.path, c.mtime_ns) for c in candidates), config.memory.hot_sessions)
        current: dict[str, SessionState] = {}
        jobs: list[Job] = []
        for c in candidates:
            state = prior.get(c.path)
            if (
                state is not None
                and state.tier == tiers[c.path]
                and state.stamp == c.stamp
                and not state.index_deltas  # `pipeline run` left deltas: fold them
                and not waits_to_settle(state)  # its last line can be read now
                and not (scrub.due(c.path) and scrub.repair(writer.layout, state))
            ):
                current[c.path] = state
                continue
            if state is not None and state.stamp == c.stamp and state.tier == tiers[c.path]:
                report.rebuilt += 1
            jobs.append(Job(c.path, c.agent, tiers[c.path], policy, str(config.index_dir), archive))
        unreadable = [p for p, _, r in problems if r == SOURCE_UNREADABLE]
        for path, state in prior.items():
            if under(unreadable, path):
                current.setdefault(path, state)
        skipped = {p: SkippedFile(p, a, r) for p, a, r in problems}
        by_path = {c.path: c for c in candidates}
        sizes = {c.path: c.size for c in candidates}
        kept = _kept_from_archive(config, archive, keep_out, prior, by_path, current, report)
        for job, size in kept:
            jobs.append(job)
            sizes[job.path] = size
        restated = any(prior.get(p) is not s for p, s in current.items())
        report.reused = len(current)
        building = {j.path for j in jobs}
        report.removed = sum(
            1 for p in prior if p not in by_path and p not in current and p not in building
        )
        # Biggest first keeps the pool busy to the end instead of waiting on one straggler.
        jobs.sort(key=lambda j: (-sizes[j.path], j.path))
        total_bytes = sum(sizes[j.path] for j in jobs)
        inline = total_bytes < INLINE_BYTES
        changed = (
            bool(jobs)
            or restated
            or report.removed > 0
            or _skipped_changed(previous, skipped)
            or _lexicon_missing(previous)
            or _sources_changed(previous, config)
        )
        if not changed:
            report.seconds = time.perf_counter() - started
            log.info("index.done", **report.as_dict())
            return report
        # Something changed even with no session to index (a file deleted, a lexicon
        # missing): one empty batch still publishes it.
        batches = list(
            _batches(
                jobs, sizes, config.memory.max_sync_sessions, config.memory.max_sync_source_bytes
            )
        ) or [[]]
        done_sessions = done_bytes = 0
        keeper = LexiconKeeper(writer)
        lexicon = previous.lexicon if previous is not None else ()
        pool = stack.enter_context(WorkerPool(processes, inline))
        early = _EarlyBuckets(
            pool,
            config.index_dir,
            jobs if len(batches) == 1 else (),
            list(current.values()) if len(batches) == 1 else (),
            report,
        )
        by_job = {j.path: j for j in jobs}
        for number, batch in enumerate(batches):
            if len(batches) == 1:
                batch = early.order(batch)
            for result in pool.index(batch, sizes):
                if result.reason == DISK_FULL:
                    # Publishing needs room too: stop, keep what is published, say where.
                    raise DiskFull(config.index_dir)
                early.done(by_job[result.path], result.state)
                done_sessions += 1
                done_bytes += sizes[result.path]
                report.source_bytes_read += result.source_bytes
                report.bytes_written += result.bytes_written
                if result.state is not None:
                    current[result.path] = result.state
                    skipped.pop(result.path, None)
                    report.indexed += 1
                    for old in result.retired:  # old versions the archive keeps apart
                        current[old.path] = old
                    for key in result.dropped:  # ... and those the file holds again
                        current.pop(key, None)
                else:
                    current.pop(result.path, None)
                    reason = result.reason or INDEX_ERROR
                    skipped[result.path] = SkippedFile(result.path, result.agent, reason)
                    report.failed += 1
                    if result.error:
                        report.errors.append((result.path, result.error))
                        log.error("session.failed", path=result.path, traceback=result.error)
                    else:
                        log.warning("session.skipped", path=result.path, reason=reason)
                if progress is not None:
                    progress(done_sessions, len(jobs), done_bytes, total_bytes)
            pending = [j for later in batches[number + 1 :] for j in later]
            reasons: tuple[str, ...] = ()
            pending_skips: dict[str, SkippedFile] = {}
            if pending:
                reason = (
                    MAX_SYNC_SESSIONS
                    if len(batch) >= config.memory.max_sync_sessions
                    else MAX_SYNC_SOURCE_BYTES
                )
                reasons = (reason,)
                for j in pending:
                    if j.path not in current:
                        pending_skips[j.path] = SkippedFile(j.path, j.agent, reason)
            generation = writer.current_generation() + 1
            before = writer.bytes_written
            cold = [s for s in current.values() if s.tier != "hot"]
            if pending:
                # More batches follow and will change the buckets again: publish what is
                # built (a digest no segment covers answers from its own vocabulary) and
                # build the lexicon once, with the last batch.
                lexicon = keeper.plan(lexicon, cold).segments
            else:
                # The buckets started early are being built in the workers: write the
                # manifest's chunks meanwhile, and let the workers go as soon as the last
                # bucket is in (their exit then overlaps the publish).
                writer.stage_chunks(current.values())
                lexicon = keeper.complete(lexicon, cold, early.build)
                pool.close()
            manifest = Manifest(
                generation=generation,
                created_ns=now_ns(),
                policy=fingerprint,
                roots={agent: str(root) for agent, root in config.roots.items()},
                hot_sessions=config.memory.hot_sessions,
                sessions=tuple(current[p] for p in sorted(current)),
                skipped=tuple(sorted({**skipped, **pending_skips}.values(), key=lambda s: s.path)),
                reasons=reasons,
                lexicon=lexicon,
                sources=source_specs(config.roots),
            )
            writer.publish(manifest)
            report.bytes_written += writer.bytes_written - before
            report.generations.append(generation)
            log.info("generation.published", generation=generation, sessions=len(current))
        writer.collect_garbage()
    report.seconds = time.perf_counter() - started
    log.info("index.done", **report.as_dict())
    return report


def _sources_changed(previous: Manifest | None, config: Config) -> bool:
    """The manifest records other source facts than the adapters' (written before it
    recorded them, or by another release): publish once, so the query side reads folders by
    today's rules."""
    return previous is not None and previous.sources != source_specs(config.roots)


def _kept_from_archive(
    config: Config,
    archive: ArchiveSettings | None,
    keep_out: KeepOut,
    prior: dict[str, SessionState],
    live: Mapping[str, object],
    current: dict[str, SessionState],
    report: RunReport,
) -> list[tuple[Job, int]]:
    """Sessions whose source is gone: kept as they are when the archive proves their bytes
    (into *current*), built from the archive otherwise (the jobs returned, with their sizes);
    forgotten or excluded ones are purged from the archive. Chains the published index does
    not know (after a rebuild, or another policy) are built too."""
    tombstones = keep_out.archive.tombstones()
    purge = [p for p in prior if p not in live and keep_out.blocks(p, tombstones)]
    writer = keeper(archive)
    inodes = {(c.stamp[0], c.stamp[1]): c for c in live.values() if isinstance(c, Candidate)}
    jobs: list[tuple[Job, int]] = []
    policy = policy_of(config)
    if writer is not None:
        for path, state in prior.items():
            if path in live or path in current or path in purge:
                continue
            try:
                chain = writer.reader.head(path)
            except CorruptRecord:
                continue
            if chain is None or not usable(chain, path):
                continue
            moved = inodes.get((state.dev, state.inode))
            if moved is not None and begins_with(moved.path, state.size, state.source_hash):
                writer.remove(path)  # renamed: the session lives on from its new path
                continue
            if (
                state.tier == COLD
                and state.archive in (KEPT, ARCHIVED)
                and (chain.length, chain.hash) == (state.size, state.source_hash)
            ):
                if chain.stamp != state.stamp:
                    writer.restamp(path, state.stamp)
                current[path] = state if state.archived else replace(state, archive=ARCHIVED)
            else:
                job = Job(path, chain.agent, COLD, policy, str(config.index_dir), archive)
                jobs.append((job, chain.length))
        known = {key_name(p) for p in (*live, *prior)}
        for name in sorted(writer.reader.names() - known):
            try:
                chain = writer.reader.head_of(name)
            except CorruptRecord:
                continue
            if chain is None or key_name(chain.key) != name or chain.length == 0:
                continue
            if keep_out.blocks(chain.key, tombstones):
                purge.append(chain.key)
                continue
            job = Job(chain.key, chain.agent, COLD, policy, str(config.index_dir), archive)
            jobs.append((job, chain.length))
    if purge:
        # forgetting works with keep = false too: what was kept is removed all the same
        remover = writer or ArchiveWriter(config.archive_dir, max_bytes=config.archive.max_bytes)
        for key in purge:
            remover.remove(key)
        report.forgotten = len(purge)
    report.archived = sum(1 for s in current.values() if s.archived) + len(jobs)
    return jobs


def _lexicon_missing(previous: Manifest | None) -> bool:
    """An index written before cold lexicons existed gets one at its next run."""
    return (
        previous is not None
        and not previous.lexicon
        and any(s.tier != "hot" for s in previous.sessions)
    )


def _skipped_changed(previous: Manifest | None, skipped: dict[str, SkippedFile]) -> bool:
    if previous is None:
        return True
    return {s.path: s for s in previous.skipped} != skipped


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
