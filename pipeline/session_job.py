"""One session through the five stages, from its bytes to stored records.

    read bytes (+fstat) ─► blake3 ─► parse ─► adapter ─► lineage ×2 ─► normalize ×1-2
        ─► digest: SessionEntries + (HotShard | ColdDigest) ─► StoreWriter.put ─► SessionState

This runs inside a worker process; everything it receives and returns is a plain, picklable
value. The stamp recorded is the one of the open file descriptor the bytes were read from, so
a writer appending meanwhile makes the session look stale next time, never silently current.
"""

from __future__ import annotations

import os
import time
import traceback
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

import structlog

from pipeline.archiving import (
    ArchiveSettings,
    content_lost,
    hashes,
    keeper,
    read_chain,
)
from pipeline.discovery import Stamp, stamp_of, subagent_meta
from stages.agents import adapter
from stages.appender import waiting
from stages.built import Built
from stages.digest import (
    SessionFold,
    ViewInput,
    build_digest,
    build_entries,
    build_shard,
    summarize,
)
from stages.drift import versioned
from stages.lineage import lineage
from stages.normalize import normalize
from stages.normalized import EntryMemo
from stages.policy import Policy
from stages.read import read_parsed
from stages.tier import COLD, HOT
from store.archive import ARCHIVED, NOT_KEPT, Chain, retired_key, source_of
from store.archive_writer import ArchiveWriter
from store.atomic import SyncThreads
from store.dblayout import split_member
from store.dbsource import MemberTooLarge, read_member
from store.errors import is_disk_full
from store.files import open_quietly
from store.reasons import (
    DISK_FULL,
    INDEX_ERROR,
    OVERSIZED_FILE,
    PARTIAL_LINE,
    SOURCE_UNAVAILABLE,
)
from store.records import SessionState
from store.writer import StoreWriter

__all__ = [
    "Job",
    "JobResult",
    "OversizedFile",
    "build_session",
    "index_session",
    "index_sessions",
    "read_source",
]

log = structlog.get_logger()

# A file untouched this long has no writer mid-line: its last line is read even without its
# newline (a record, or ``unterminated_line``), never left waiting in silence.
SETTLED_NS: Final = 10 * 1_000_000_000


# The fsync threads of every message's batch: a worker commits one message after another,
# and starting threads for each cost more wall time than its fsyncs (store.atomic).
_SYNC_THREADS: Final = SyncThreads()


def settled(mtime_ns: int, now_ns: int | None = None) -> bool:
    """Whether a file last modified at *mtime_ns* has been quiet for ``SETTLED_NS``."""
    return (time.time_ns() if now_ns is None else now_ns) - mtime_ns >= SETTLED_NS


def waits_to_settle(state: SessionState, now_ns: int | None = None) -> bool:
    """A session built while its last line waited (``partial_line``) whose file has been
    quiet since: only a new build reads that line."""
    return any(PARTIAL_LINE in v.reasons for v in state.views) and settled(state.mtime_ns, now_ns)


@dataclass(frozen=True, slots=True)
class Job:
    path: str
    agent: str
    tier: str
    policy: Policy
    index_dir: str
    # the archive to keep the bytes in, and to read them from when the source is gone
    archive: ArchiveSettings | None = None


@dataclass(frozen=True, slots=True)
class JobResult:
    """A new SessionState, or the reason the session could not be indexed."""

    path: str
    agent: str
    state: SessionState | None
    bytes_written: int
    source_bytes: int
    reason: str | None = None
    error: str | None = None
    # old versions of the session kept from the archive on their own (``Built.retired``),
    # and those the file holds again (their sessions go)
    retired: tuple[SessionState, ...] = ()
    dropped: tuple[str, ...] = ()


class OversizedFile(Exception):
    """A session file larger than ``Policy.max_file_bytes``: it is not read at all."""

    def __init__(self, path: str, size: int, limit: int) -> None:
        super().__init__(f"{path}: {size} bytes, more than maxFileBytes = {limit}")
        self.path, self.size, self.limit = path, size, limit


def read_source(path: str, limit: int | None = None, agent: str = "") -> tuple[bytes, Stamp]:
    """The file's bytes and the stamp of the descriptor they were read from; a file larger
    than *limit* raises ``OversizedFile`` before a byte of it is read (every stage reads a
    session whole, so its size is what it costs in memory: a 1 GiB sparse file, 1 GiB).
    A session inside a database file (*agent*'s ``Adapter.database``) is its canonical bytes
    (``store.dbsource``); a database that cannot be read raises ``DbUnreadable`` (an
    ``OSError``)."""
    layout = adapter(agent).database if agent else None
    if layout is not None:
        where = split_member(path)
        if where is None:
            raise FileNotFoundError(path)
        try:
            return read_member(*where, layout, limit)
        except MemberTooLarge as exc:
            raise OversizedFile(path, exc.size, limit or 0) from exc
    fd = open_quietly(path, getattr(os, "O_NOFOLLOW", 0))
    try:
        st = os.fstat(fd)
        if limit is not None and st.st_size > limit:
            raise OversizedFile(path, st.st_size, limit)
        # One buffer of the file's size: chunks joined at the end would hold it twice.
        data = os.read(fd, st.st_size) if st.st_size > 0 else b""
        if 0 < len(data) < st.st_size:  # a short read (huge counts are split by the kernel)
            chunks = [data]
            remaining = st.st_size - len(data)
            while remaining > 0 and (chunk := os.read(fd, min(remaining, 1 << 24))):
                chunks.append(chunk)
                remaining -= len(chunk)
            data = b"".join(chunks)
    finally:
        os.close(fd)
    dev, ino, _, mtime_ns, ctime_ns = stamp_of(st)
    # If the file shrank while reading, the stamp must describe what was read.
    return data, (dev, ino, len(data), mtime_ns, ctime_ns)


def index_session(job: Job, writer: StoreWriter | None = None) -> JobResult:
    """Run every stage for one session and store its records (with *writer*, when given);
    a session whose source is gone is read from the archive. Never raises."""
    origin: Chain | None = None
    try:
        data, stamp = read_source(job.path, job.policy.max_file_bytes, job.agent)
    except OversizedFile as exc:
        log.warning("session.oversized", path=job.path, size=exc.size, limit=exc.limit)
        return JobResult(job.path, job.agent, None, 0, 0, reason=OVERSIZED_FILE)
    except (FileNotFoundError, NotADirectoryError):
        kept = read_chain_of(job)
        if kept is None:
            return JobResult(job.path, job.agent, None, 0, 0, reason=SOURCE_UNAVAILABLE)
        origin, data = kept
        stamp = origin.stamp
    except OSError:
        return JobResult(job.path, job.agent, None, 0, 0, reason=SOURCE_UNAVAILABLE)
    try:
        return _index(job, data, stamp, writer or StoreWriter(Path(job.index_dir)), origin)
    except Exception as exc:  # a bug in a stage must cost one session, not the run
        return JobResult(
            job.path,
            job.agent,
            None,
            0,
            len(data),
            # A full disk is no fault of the session's: the run stops and resumes later.
            reason=DISK_FULL if is_disk_full(exc) else INDEX_ERROR,
            error=traceback.format_exc(),
        )


def index_sessions(jobs: Sequence[Job]) -> list[JobResult]:
    """``index_session`` for each of *jobs*, in order: one pool message, several sessions,
    whose records are made durable together (``StoreWriter.batch``). Never raises: when
    they cannot be, every session of the message fails."""
    if not jobs:
        return []
    writer = StoreWriter(Path(jobs[0].index_dir))
    archive = keeper(jobs[0].archive)
    try:
        # the archive's copies join the records' batch: one round of fsyncs for both (the
        # results go back, and a manifest can name the records, only once both are durable)
        with (
            writer.batch(_SYNC_THREADS) as files,
            archive.batch(files) if archive is not None else nullcontext(),
        ):
            return [index_session(job, writer) for job in jobs]
    except OSError as exc:
        error = traceback.format_exc()
        reason = DISK_FULL if is_disk_full(exc) else INDEX_ERROR
        return [
            JobResult(job.path, job.agent, None, 0, 0, reason=reason, error=error) for job in jobs
        ]


def _index(
    job: Job, data: bytes, stamp: Stamp, writer: StoreWriter, origin: Chain | None = None
) -> JobResult:
    before = writer.bytes_written
    built = build_session(job, data, stamp, writer, origin=origin)
    return JobResult(
        job.path,
        job.agent,
        built.state,
        writer.bytes_written - before,
        len(data),
        retired=built.retired,
        dropped=built.dropped,
    )


def read_chain_of(job: Job) -> tuple[Chain, bytes] | None:
    """The archived chain of *job*'s session and its bytes, when the archive holds them."""
    writer = keeper(job.archive)
    return read_chain(writer, job.path) if writer is not None else None


def _views(
    job: Job, data: bytes, meta: dict[str, Any] | None, *, quiet: bool = False
) -> tuple[Any, Any, list[ViewInput]]:
    """parse → adapter → lineage ×2 → normalize ×1-2 over *data* (*quiet*: ``settled``)."""
    # The stages read a retired version as the file it came from (its suffix says its format).
    session, parsed = read_parsed(data, source_of(job.path), job.agent, meta, settled=quiet)
    active, every = lineage(session, "active"), lineage(session, "all")
    # Normalizing reads the lineage only through the records it selects: without branches
    # (most sessions) "all" selects what "active" does and gets the very same result.
    if every.selected != active.selected:
        # The records both select are normalized and redacted once, through the memo the
        # append path keeps across the two modes (stages.rederive); a cache only. Here it
        # keeps texts too: Pi's normalizer makes each view's entries anew, and their texts
        # were scanned for credentials twice (~8 % of the text a build scans).
        memo = EntryMemo(texts=True)
        normalized = normalize(session, active, job.policy, memo=memo)
        normalized_all = normalize(session, every, job.policy, memo=memo)
    else:
        normalized = normalized_all = normalize(session, active, job.policy)
    return session, parsed, [ViewInput(active, normalized), ViewInput(every, normalized_all)]


def build_session(
    job: Job, data: bytes, stamp: Stamp, writer: StoreWriter, *, origin: Chain | None = None
) -> Built:
    """Run every stage over *data* (the file's bytes, described by *stamp*, or the bytes of
    the archived chain *origin*) and store the records with *writer*; bytes read from the
    file are kept in the archive. Raises whatever a stage raises."""
    archive = keeper(job.archive) if origin is None else None
    chain = archive.reader.head(job.path) if archive is not None else None
    if chain is not None and chain.key != job.path:
        chain = None
    source_hash, prefix_hash = hashes(data, chain.length if chain is not None else 0)
    meta = origin.meta if origin is not None else subagent_meta(job.path, job.agent)
    # an archived copy has no writer any more
    quiet = origin is not None or settled(stamp[3])
    session, parsed, views = _views(job, data, meta, quiet=quiet)
    reasons = session.reasons
    if origin is not None and origin.truncated:
        reasons = (*reasons, NOT_KEPT)  # the source held more than the archive could keep
    fold = SessionFold.of(
        session,
        path=job.path,
        source_hash=source_hash,
        policy=job.policy,
        file_reasons=reasons,
    )
    entries_name, entries_bytes = writer.put(build_entries(fold, views))
    record = (
        build_shard(fold, views, job.policy)
        if job.tier == HOT
        else build_digest(fold, views, job.policy)
    )
    index_name, index_bytes = writer.put(record)
    retired: tuple[SessionState, ...] = ()
    dropped: tuple[str, ...] = ()
    kept = ARCHIVED if origin is not None else ""
    if archive is not None:
        keys: tuple[str, ...] = chain.retired if chain is not None else ()
        if keys:
            keys, dropped = _restored(job, keys, views, archive)
        if chain is not None and (
            chain.length > len(data) or (chain.length and prefix_hash(chain.length) != chain.hash)
        ):
            retired = _retire(job, chain, views, writer, archive)
            keys += tuple(s.path for s in retired)
        kept = archive.keep_whole(
            job.path,
            session.agent,
            data,
            stamp,
            meta,
            full_hash=source_hash,
            prefix_hash=prefix_hash,
            retired=keys,
        )
    dev, ino, size, mtime_ns, ctime_ns = stamp
    state = SessionState(
        path=job.path,
        agent=session.agent,
        session_id=session.session_id,
        cwd=session.cwd,
        parent_session=session.parent_session,
        dev=dev,
        inode=ino,
        size=size,
        mtime_ns=mtime_ns,
        ctime_ns=ctime_ns,
        source_hash=source_hash,
        tier=job.tier,
        index_record=index_name,
        index_bytes=index_bytes,
        entries_record=entries_name,
        entries_bytes=entries_bytes,
        views=summarize(fold, views, record),
        sidechain=session.sidechain,
        unknown_records=versioned(session.writer_version, session.unknown),
        archive=kept,
        title=session.title,
    )
    return Built(
        waiting(state, parsed.withheld),
        session,
        tuple(views),
        record,
        parsed.consumed,
        parsed.next_line,
        meta,
        retired,
        dropped,
        tail_taken=parsed.tail_taken,
    )


def _restored(
    job: Job, keys: tuple[str, ...], views: list[ViewInput], archive: ArchiveWriter
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The old versions still kept apart, and those whose entries the file holds again (a
    rewrite caught half-way, then completed): their copies are removed, their sessions go."""
    kept: list[str] = []
    gone: list[str] = []
    for key in keys:
        found = read_chain(archive, key)
        if found is not None:
            old_chain, old_bytes = found
            _, _, old_views = _views(replace(job, path=key), old_bytes, old_chain.meta)
            if content_lost(old_views[1].normalized.entries, views[1].normalized.entries):
                kept.append(key)
                continue
            archive.remove(key)
            log.info("archive.restored", path=job.path, key=key)
        gone.append(key)
    return tuple(kept), tuple(gone)


def _retire(
    job: Job, chain: Chain, views: list[ViewInput], writer: StoreWriter, archive: ArchiveWriter
) -> tuple[SessionState, ...]:
    """The file was rewritten so that the archived chain is no longer its beginning: when
    the old version held entries the new one lacks, keep it as a session of its own (cold,
    read from the archive); otherwise the new chain simply replaces it."""
    found = read_chain(archive, job.path)
    if found is None:
        return ()
    old_chain, old_bytes = found
    _, _, old_views = _views(job, old_bytes, old_chain.meta)
    if not content_lost(old_views[1].normalized.entries, views[1].normalized.entries):
        return ()
    key = retired_key(job.path, old_chain.hash)
    moved = archive.retire(job.path, key)
    if moved is None:
        return ()
    log.info("archive.retired", path=job.path, key=key)
    old_job = replace(job, path=key, tier=COLD, archive=None)
    built = build_session(old_job, old_bytes, moved.stamp, writer, origin=moved)
    return (built.state,)
