"""One session through the five stages, from its bytes to stored records.

    read bytes (+fstat) ─► blake3 ─► parse ─► adapter ─► lineage ×2 ─► normalize ×1-2
        ─► digest: SessionEntries + (HotShard | ColdDigest) ─► StoreWriter.put ─► SessionState

This runs inside a worker process; everything it receives and returns is a plain, picklable
value. The stamp recorded is the one of the open file descriptor the bytes were read from, so
a writer appending meanwhile makes the session look stale next time, never silently current.
"""

from __future__ import annotations

import os
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import blake3

from pipeline.discovery import Stamp, stamp_of, subagent_meta
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
from stages.policy import Policy
from stages.read import read_parsed
from stages.tier import HOT
from store.errors import is_disk_full
from store.files import open_quietly
from store.reasons import DISK_FULL, INDEX_ERROR, SOURCE_UNAVAILABLE
from store.records import SessionState
from store.writer import StoreWriter

__all__ = [
    "Job",
    "JobResult",
    "build_session",
    "index_session",
    "index_sessions",
    "read_source",
]

# A job's reason when the index's disk was full: no fault of the session's, never published.


@dataclass(frozen=True, slots=True)
class Job:
    path: str
    agent: str
    tier: str
    policy: Policy
    index_dir: str


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


def read_source(path: str) -> tuple[bytes, Stamp]:
    """The file's bytes and the stamp of the descriptor they were read from."""
    fd = open_quietly(path, getattr(os, "O_NOFOLLOW", 0))
    try:
        st = os.fstat(fd)
        chunks: list[bytes] = []
        remaining = st.st_size
        while remaining > 0:
            chunk = os.read(fd, min(remaining, 1 << 24))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        data = b"".join(chunks)
    finally:
        os.close(fd)
    dev, ino, _, mtime_ns, ctime_ns = stamp_of(st)
    # If the file shrank while reading, the stamp must describe what was read.
    return data, (dev, ino, len(data), mtime_ns, ctime_ns)


def index_session(job: Job, writer: StoreWriter | None = None) -> JobResult:
    """Run every stage for one session and store its records (with *writer*, when given).
    Never raises."""
    try:
        data, stamp = read_source(job.path)
    except OSError:
        return JobResult(job.path, job.agent, None, 0, 0, reason=SOURCE_UNAVAILABLE)
    try:
        return _index(job, data, stamp, writer or StoreWriter(Path(job.index_dir)))
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
    try:
        with writer.batch():
            return [index_session(job, writer) for job in jobs]
    except OSError as exc:
        error = traceback.format_exc()
        reason = DISK_FULL if is_disk_full(exc) else INDEX_ERROR
        return [
            JobResult(job.path, job.agent, None, 0, 0, reason=reason, error=error) for job in jobs
        ]


def _index(job: Job, data: bytes, stamp: Stamp, writer: StoreWriter) -> JobResult:
    before = writer.bytes_written
    built = build_session(job, data, stamp, writer)
    return JobResult(job.path, job.agent, built.state, writer.bytes_written - before, len(data))


def build_session(job: Job, data: bytes, stamp: Stamp, writer: StoreWriter) -> Built:
    """Run every stage over *data* (the file's bytes, described by *stamp*) and store the
    records with *writer*. Raises whatever a stage raises."""
    source_hash = blake3.blake3(data).hexdigest()
    meta = subagent_meta(job.path, job.agent)
    session, parsed = read_parsed(data, job.path, job.agent, meta)
    active, every = lineage(session, "active"), lineage(session, "all")
    normalized = normalize(session, active, job.policy)
    # Normalizing reads the lineage only through the records it selects: without branches
    # (most sessions) "all" selects what "active" does and gets the very same result.
    if every.selected != active.selected:
        normalized_all = normalize(session, every, job.policy)
    else:
        normalized_all = normalized
    views = [ViewInput(active, normalized), ViewInput(every, normalized_all)]
    fold = SessionFold.of(
        session,
        path=job.path,
        source_hash=source_hash,
        policy=job.policy,
        file_reasons=session.reasons,
    )
    entries_name, entries_bytes = writer.put(build_entries(fold, views))
    record = (
        build_shard(fold, views, job.policy)
        if job.tier == HOT
        else build_digest(fold, views, job.policy)
    )
    index_name, index_bytes = writer.put(record)
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
    )
    return Built(state, session, tuple(views), record, parsed.consumed, parsed.next_line, meta)
