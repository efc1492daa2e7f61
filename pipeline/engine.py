"""The session engine: turn a session's journal events into its next SessionState.

::

    events of one session (a batch, in order) + its last state + its tier now
        delete ──────────────────────────────────────────────► Drop
        same bytes as indexed (dev, inode, size, hash) ──────► nothing, or a new stamp
        rewrite / no hot state / new tier / append declined ─► whole build (session_job)
        append: Pi, extending the active leaf ───────────────► delta records (appender)
                Claude / Codex, earlier entries unchanged ─► delta records (rederive)
                                                   ─► deltas compacted in tiers (deltas)
    merges_due(now): too many delta bytes, or quiet for a while ─► whole build (merge)

The engine lives in the worker process that owns the session, keeping a bounded number of
``HotSession``s (LRU; parsed records of Claude and Codex sessions within a byte budget): a
session that lost its hot state is built whole on its next change, which also folds its
deltas. Every whole build goes through ``session_job.build_session``, so
a merged session is byte for byte what ``pipeline run --once`` makes of the same file.
"""

from __future__ import annotations

import os
import traceback
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import blake3
import structlog

from pipeline.archiving import ArchiveSettings, keeper, read_chain, usable
from pipeline.discovery import subagent_meta
from pipeline.session_job import Job, JobResult, OversizedFile, build_session, read_source
from stages.agents import adapter
from stages.appender import Delta, HotSession, asks_sidecar, commit, extend, hot_session
from stages.policy import Policy
from stages.tier import COLD
from store.archive import ARCHIVED, KEPT, NOT_KEPT
from store.config import Config
from store.deltas import concat_entries, concat_shards
from store.errors import CorruptRecord, is_disk_full
from store.files import open_quietly
from store.reasons import INDEX_ERROR, OVERSIZED_FILE, SOURCE_UNAVAILABLE, SOURCE_UNREADABLE
from store.records import SessionState, SkippedFile, SourceEvent
from store.writer import StoreWriter

__all__ = [
    "DELETE",
    "Builder",
    "REWRITE",
    "APPEND",
    "Change",
    "Drop",
    "EngineCounters",
    "EngineSettings",
    "SessionEngine",
    "Skip",
    "UNREADABLE",
    "Upsert",
    "event_ctime",
    "event_hash",
    "policy_of",
]

log = structlog.get_logger()

APPEND, REWRITE, DELETE = "append", "rewrite", "delete"
# `pipeline forget` / `[sources] exclude`: the session leaves the index and the archive
FORGET = "forget"
# a folder that cannot be listed (its path is the folder's): named in coverage as skipped,
# while what the index holds of the sessions in it is kept (``discovery.under``)
UNREADABLE = "unreadable"


@dataclass(frozen=True, slots=True)
class Upsert:
    state: SessionState


@dataclass(frozen=True, slots=True)
class Skip:
    skipped: SkippedFile


@dataclass(frozen=True, slots=True)
class Drop:
    path: str
    # forgotten (not merely deleted): older generations naming it are collected promptly
    purge: bool = False


Change = Upsert | Skip | Drop


@dataclass(frozen=True, slots=True)
class EngineSettings:
    """How much the engine keeps and when it folds deltas into a new base."""

    hot_capacity: int = 32
    # Source bytes of sessions without a tail reader whose parsed records stay in memory
    # (their appends then run the stages in memory instead of rebuilding whole).
    parsed_bytes: int = 64 << 20
    delta_fanout: int = 8
    merge_ratio: float = 0.25
    merge_min_bytes: int = 1 << 20
    merge_quiet_s: float = 30.0


@dataclass(slots=True)
class EngineCounters:
    """What the engine did since it started (reported by ``pipeline status``)."""

    whole: int = 0
    appends: int = 0
    declined: int = 0
    restamps: int = 0
    unchanged: int = 0
    merges: int = 0
    compactions: int = 0
    merge_bytes: int = 0
    warmed: int = 0

    def as_dict(self) -> dict[str, int]:
        return {
            "whole": self.whole,
            "appends": self.appends,
            "declined": self.declined,
            "restamps": self.restamps,
            "unchanged": self.unchanged,
            "merges": self.merges,
            "compactions": self.compactions,
            "mergeBytes": self.merge_bytes,
            "warmed": self.warmed,
        }


# Whole builds run elsewhere ahead of time (a catch-up's worker processes): the jobs and
# their source sizes in, each job's result out (in any order).
Builder = Callable[[Sequence[Job], Mapping[str, int]], Iterable[JobResult]]


def policy_of(config: Config) -> Policy:
    """The index policy *config* sets: what every record is built under."""
    m = config.memory
    return Policy(
        max_entry_chars=m.max_entry_chars,
        index_thinking=m.index_thinking,
        index_tool_output=m.index_tool_output,
        max_cold_vocabulary_bytes=m.max_cold_vocabulary_bytes,
        max_cold_cache_bytes=m.max_cold_cache_bytes,
        redact=config.privacy.redact,
        redact_disabled=config.privacy.disabled_rules,
        max_file_bytes=config.max_file_bytes,
    )


def event_hash(event: SourceEvent) -> str | None:
    """The blake3 hex of the file's first ``end`` bytes as the watcher read them."""
    found = event.extra.get("hash")
    return found if isinstance(found, str) else None


def event_ctime(event: SourceEvent) -> int | None:
    found = event.extra.get("ctime_ns")
    return found if isinstance(found, int) else None


class SessionEngine:
    """Sessions of one worker: their hot state, and the records each change stores."""

    def __init__(
        self,
        index_dir: Path,
        policy: Policy,
        *,
        settings: EngineSettings | None = None,
        clock: Callable[[], float],
        archive: ArchiveSettings | None = None,
        builder: Builder | None = None,
    ) -> None:
        self.index_dir = Path(index_dir)
        self.policy = policy
        self.settings = settings or EngineSettings()
        self.clock = clock
        self.writer = StoreWriter(self.index_dir)
        self.counters = EngineCounters()
        self.archive = archive
        self.keeper = keeper(archive)
        # changes to other sessions a change made (an old version retired on a rewrite):
        # the worker takes them after each call
        self.extra: list[Change] = []
        self.builder = builder
        # (path, tier) -> the whole build *builder* made of it, taken by ``whole``
        self._prebuilt: dict[tuple[str, str], JobResult] = {}
        self._hot: OrderedDict[str, HotSession] = OrderedDict()
        self._changed: dict[str, float] = {}

    # -- applying events -------------------------------------------------------------------

    def apply(
        self,
        path: str,
        agent: str,
        events: Sequence[SourceEvent],
        state: SessionState | None,
        tier: str,
    ) -> Change | None:
        """The change the journal *events* of one session make (None: nothing to publish)."""
        last = events[-1]
        if last.kind == UNREADABLE:
            self.forget(path)
            return Skip(SkippedFile(path, agent, SOURCE_UNREADABLE))
        if last.kind == FORGET:
            self.forget(path)
            if self.keeper is not None:
                self.keeper.remove(path)
            return Drop(path, purge=True)
        if last.kind == DELETE:
            self.forget(path)
            if last.extra.get("moved") and self.keeper is not None:
                self.keeper.remove(path)  # renamed: it lives on from its new path
                return Drop(path)
            return self._archived(path, agent, state) or Drop(path)
        hot = self._hot.get(path)
        if hot is not None:
            self._hot.move_to_end(path)
            state = hot.state
        member = adapter(agent).database is not None
        if state is not None and state.tier == tier and _same_bytes(state, last, member=member):
            # (a database's session has the same bytes in a new file: a new dev and inode)
            now = (last.dev, last.inode, last.mtime_ns, event_ctime(last))
            if (state.dev, state.inode, state.mtime_ns, state.ctime_ns) == now:
                self.counters.unchanged += 1
                return None
            return self._restamp(path, agent, state, hot, tier, last)
        if (
            state is None
            or hot is None
            or state.tier != tier
            or any(e.kind == REWRITE for e in events)
            or adapter(agent).files.read_whole(path)  # saved whole each time: no line appends
            # grown past the cap: a rebuild would skip it, so the live path does too
            or last.end > self.policy.max_file_bytes
        ):
            return self.whole(path, agent, tier)
        change = self._append(hot, last)
        if change is None:
            self.counters.declined += 1
            return self.whole(path, agent, tier)
        return change

    def builds_whole(
        self, events: Sequence[SourceEvent], state: SessionState | None, tier: str
    ) -> bool:
        """True when ``apply`` of *events* builds the session whole (what ``prebuild`` may
        do ahead of time): a change to a session with no hot state."""
        last = events[-1]
        if last.kind in (FORGET, DELETE, UNREADABLE) or last.path in self._hot:
            return False
        member = adapter(last.agent).database is not None
        same = state is not None and _same_bytes(state, last, member=member)
        return not (same and state is not None and state.tier == tier)

    def prebuild(self, wanted: Sequence[tuple[str, str, str, int]]) -> None:
        """Build the sessions *wanted* (path, agent, tier, size) whole with the builder, all
        at once, for ``whole`` to take: a backlog of whole builds runs in parallel. Only a
        catch-up does this: a session built so keeps no hot state (its next change is a
        whole build), which a process about to exit does not need."""
        if self.builder is None or not wanted:
            return
        jobs = [
            Job(path, agent, tier, self.policy, str(self.index_dir), self.archive)
            for path, agent, tier, _ in wanted
        ]
        sizes = {path: size for path, _, _, size in wanted}
        tiers = {path: tier for path, _, tier, _ in wanted}
        for result in self.builder(jobs, sizes):
            self._prebuilt[(result.path, tiers[result.path])] = result

    def whole(self, path: str, agent: str, tier: str) -> Change:
        """Index the session whole (every stage) and keep its hot state; a session whose
        source is gone is built (cold) from its archived bytes."""
        self.counters.whole += 1
        done = self._prebuilt.pop((path, tier), None)
        if done is not None and done.state is not None and not done.state.archived:
            # Built from the file, as below; anything else (a failure, a file gone meanwhile)
            # is built here again, so it takes the same way as without a builder.
            self.extra.extend(Upsert(s) for s in done.retired)
            self.extra.extend(Drop(k) for k in done.dropped)
            return Upsert(done.state)
        try:
            data, stamp = read_source(path, self.policy.max_file_bytes, agent)
        except OversizedFile as exc:
            log.warning("session.oversized", path=path, size=exc.size, limit=exc.limit)
            self.forget(path)
            return Skip(SkippedFile(path, agent, OVERSIZED_FILE))
        except (FileNotFoundError, NotADirectoryError):
            self.forget(path)
            kept = self._from_archive(path, agent)
            return kept if kept is not None else Drop(path)  # its delete event is on the way
        except OSError:
            self.forget(path)
            return Skip(SkippedFile(path, agent, SOURCE_UNAVAILABLE))
        job = Job(path, agent, tier, self.policy, str(self.index_dir), self.archive)
        try:
            built = build_session(job, data, stamp, self.writer)
        except Exception as exc:  # a bug in a stage must cost one session, not the worker
            if is_disk_full(exc):
                raise  # no fault of the session's: the worker pauses until there is room
            log.error("session.failed", path=path, traceback=traceback.format_exc())
            self.forget(path)
            return Skip(SkippedFile(path, agent, INDEX_ERROR))
        keep = len(data) <= self.settings.parsed_bytes
        self._remember(path, hot_session(built, data, keep_parsed=keep))
        self.extra.extend(Upsert(s) for s in built.retired)
        self.extra.extend(Drop(k) for k in built.dropped)
        return Upsert(built.state)

    # -- the archive -----------------------------------------------------------------------

    def _archived(self, path: str, agent: str, state: SessionState | None) -> Change | None:
        """The session whose source was deleted, kept from the archive (None: not kept).

        A cold session whose chain holds exactly its indexed bytes keeps its records (a
        rebuild from the chain makes the very same ones); any other is built again, cold,
        from what the chain holds.
        """
        if self.keeper is None:
            return None
        try:
            chain = self.keeper.reader.head(path)
        except CorruptRecord:
            return None
        if chain is None or not usable(chain, path):
            return None
        if (
            state is not None
            and state.tier == COLD
            and state.archive in (KEPT, ARCHIVED)
            and (chain.length, chain.hash) == (state.size, state.source_hash)
        ):
            if chain.stamp != state.stamp:
                self.keeper.restamp(path, state.stamp)
            if state.archived:
                return Upsert(state)  # kept already: the same state publishes nothing
            log.info("session.archived", path=path)
            return Upsert(replace(state, archive=ARCHIVED))
        return self._from_archive(path, agent)

    def _from_archive(self, path: str, agent: str) -> Change | None:
        if self.keeper is None:
            return None
        found = read_chain(self.keeper, path)
        if found is None:
            return None
        chain, data = found
        job = Job(path, chain.agent or agent, COLD, self.policy, str(self.index_dir), None)
        try:
            built = build_session(job, data, chain.stamp, self.writer, origin=chain)
        except Exception as exc:
            if is_disk_full(exc):
                raise
            log.error("session.failed", path=path, traceback=traceback.format_exc())
            return Skip(SkippedFile(path, agent, INDEX_ERROR))
        log.info("session.archived", path=path, rebuilt=True)
        return Upsert(built.state)

    def merge(self, path: str, agent: str, tier: str) -> Change:
        """Fold a session's deltas into a new base (a whole build: the exact result)."""
        before = self.writer.bytes_written
        change = self.whole(path, agent, tier)
        self.counters.whole -= 1
        self.counters.merges += 1
        self.counters.merge_bytes += self.writer.bytes_written - before
        return change

    def warm(self, path: str, agent: str, tier: str) -> Change:
        """Give a session hot state before its next append (a whole build, so its next
        append takes the append path): what a fresh worker does for the sessions most
        likely to be appended to next, so the first append after a start is not the one
        that pays for it (issue 22 item 11)."""
        change = self.whole(path, agent, tier)
        self.counters.whole -= 1
        self.counters.warmed += 1
        return change

    def is_hot(self, path: str) -> bool:
        return path in self._hot

    def forget(self, path: str) -> None:
        self._hot.pop(path, None)
        self._changed.pop(path, None)

    # -- merges ----------------------------------------------------------------------------

    def merges_due(
        self, now: float, states: Mapping[str, SessionState], *, urgent_only: bool = False
    ) -> list[str]:
        """Sessions with deltas that grew too big or have been quiet long enough; with
        *urgent_only*, those whose deltas passed twice the threshold (a session appended to
        without a pause must still merge some time)."""
        due: list[str] = []
        quiet = self.settings.merge_quiet_s
        for path, state in states.items():
            if not state.index_deltas:
                continue
            since = self._changed.setdefault(path, now)
            hot = self._hot.get(path)
            if urgent_only:
                if hot is not None and self._too_big(hot, factor=2):
                    due.append(path)
            elif now - since >= quiet or (hot is not None and self._too_big(hot)):
                due.append(path)
        return due

    def _too_big(self, hot: HotSession, factor: float = 1) -> bool:
        s = self.settings
        base = hot.state.index_bytes + hot.state.entries_bytes
        return hot.delta_bytes > factor * max(s.merge_min_bytes, s.merge_ratio * base)

    # -- the append path -------------------------------------------------------------------

    def _append(self, hot: HotSession, event: SourceEvent) -> Change | None:
        state = hot.state
        expected = event_hash(event)
        if (
            expected is None
            or (state.dev, state.inode) != (event.dev, event.inode)
            or event.end <= state.size
        ):
            return None
        read = _read_range(state.path, hot.consumed, event.end)
        if read is None:
            return None
        data, st = read
        hot_start = hot.consumed
        if (st.st_dev, st.st_ino) != (state.dev, state.inode):
            return None
        stamp = (st.st_dev, st.st_ino, event.end, st.st_mtime_ns, st.st_ctime_ns)
        sidecar = asks_sidecar(hot) and subagent_meta(state.path, state.agent) is not None
        appended = extend(hot, data, stamp, self.policy, expected_hash=expected, sidecar=sidecar)
        if appended is None:
            return None
        delta: Delta | None = None
        if appended.shard is not None and appended.entries is not None:
            shard_name, shard_bytes = self.writer.put(appended.shard)
            entries_name, entries_bytes = self.writer.put(appended.entries)
            delta = Delta(
                appended.shard,
                appended.entries,
                shard_name,
                entries_name,
                shard_bytes + entries_bytes,
            )
        commit(hot, appended, delta)
        self._keep_appended(hot, state, data[state.size - hot_start :], event.end)
        if appended.rederive is not None:
            self._fit_parsed()
        if delta is not None:
            self._compact(hot)
        hot.state = replace(
            hot.state,
            index_deltas=tuple(d.shard_name for d in hot.deltas),
            entries_deltas=tuple(d.entries_name for d in hot.deltas),
        )
        self._changed[state.path] = self.clock()
        self.counters.appends += 1
        return Upsert(hot.state)

    def _keep_appended(self, hot: HotSession, before: SessionState, new: bytes, end: int) -> None:
        """Keep the appended bytes in the archive (one segment); a chain that is not at the
        session's old end (the archive was off or full meanwhile) is kept whole again."""
        archive = self.keeper
        if archive is None:
            return
        state = hot.state
        if before.archive == NOT_KEPT:
            # full: appends are not kept (nor the file read again for each one); the next
            # whole build (a merge) tries again
            if state.archive != NOT_KEPT:
                hot.state = replace(state, archive=NOT_KEPT)
            return
        kept = archive.keep_append(
            state.path,
            new,
            old_length=before.size,
            old_hash=before.source_hash,
            full_hash=state.source_hash,
            stamp=state.stamp,
        )
        if kept is None:
            read = _read_range(state.path, 0, end)
            if read is None or len(read[0]) != state.size:
                kept = ""  # the file moved on meanwhile: its next change keeps it
            else:
                kept = archive.keep_whole(
                    state.path,
                    state.agent,
                    read[0],
                    state.stamp,
                    None if hot.rederive is None else hot.rederive.meta,
                    full_hash=state.source_hash,
                    prefix_hash=lambda n: blake3.blake3(read[0][:n]).hexdigest(),
                )
        if kept != state.archive:
            hot.state = replace(state, archive=kept)

    def _compact(self, hot: HotSession) -> None:
        """Fold the last ``fanout`` deltas into one when they share a level."""
        fanout = self.settings.delta_fanout
        while len(hot.deltas) >= fanout and len({d.level for d in hot.deltas[-fanout:]}) == 1:
            run = hot.deltas[-fanout:]
            shard = concat_shards([d.shard for d in run])
            entries = concat_entries([d.entries for d in run])
            shard_name, shard_bytes = self.writer.put(shard)
            entries_name, entries_bytes = self.writer.put(entries)
            hot.deltas[-fanout:] = [
                Delta(
                    shard,
                    entries,
                    shard_name,
                    entries_name,
                    shard_bytes + entries_bytes,
                    run[0].level + 1,
                )
            ]
            self.counters.compactions += 1

    def _restamp(
        self,
        path: str,
        agent: str,
        state: SessionState,
        hot: HotSession | None,
        tier: str,
        event: SourceEvent,
    ) -> Change:
        """Same bytes, new stamp (a touch, a chmod): record the stamp the file has now (a
        session inside a database: the stamp the watcher read with the bytes it hashed)."""
        if adapter(agent).database is not None:
            ctime = event_ctime(event)
            moved = replace(
                state,
                dev=event.dev,
                inode=event.inode,
                mtime_ns=event.mtime_ns,
                ctime_ns=ctime or state.ctime_ns,
            )
        else:
            try:
                st = os.stat(path, follow_symlinks=False)
            except OSError:
                return self.whole(path, agent, tier)
            if (st.st_dev, st.st_ino) != (state.dev, state.inode) or st.st_size < state.size:
                return self.whole(path, agent, tier)
            moved = replace(state, mtime_ns=st.st_mtime_ns, ctime_ns=st.st_ctime_ns)
        if self.keeper is not None and state.archive == KEPT:
            self.keeper.restamp(path, moved.stamp)
        if hot is not None:
            hot.state = moved
        self.counters.restamps += 1
        return Upsert(moved)

    def _remember(self, path: str, hot: HotSession) -> None:
        self._hot[path] = hot
        self._hot.move_to_end(path)
        self._changed[path] = self.clock()
        while len(self._hot) > self.settings.hot_capacity:
            self._hot.popitem(last=False)
        self._fit_parsed()

    def _fit_parsed(self) -> None:
        """Keep parsed records of the most recently changed sessions within the budget."""
        kept = 0
        for hot in reversed(self._hot.values()):
            if hot.rederive is None:
                continue
            if kept + hot.rederive.bytes > self.settings.parsed_bytes:
                hot.rederive = None  # its next append rebuilds it whole
            else:
                kept += hot.rederive.bytes

    def hot(self, path: str) -> HotSession | None:
        """The hot state of *path*, if kept (for tests and statistics)."""
        return self._hot.get(path)


def _same_bytes(state: SessionState, event: SourceEvent, *, member: bool = False) -> bool:
    """True when *event* describes exactly the bytes *state* indexed. A session inside a
    database (*member*) is its rows wherever the file lives: its bytes alone say so."""
    where = () if member else (state.dev, state.inode)
    there = () if member else (event.dev, event.inode)
    return (*where, state.size) == (*there, event.end) and event_hash(event) == state.source_hash


def _read_range(path: str, start: int, end: int) -> tuple[bytes, os.stat_result] | None:
    """The bytes [start, end) of *path* and the stat of the descriptor read, or None."""
    try:
        fd = open_quietly(path, getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        chunks: list[bytes] = []
        offset = start
        while offset < end:
            chunk = os.pread(fd, min(end - offset, 1 << 24), offset)
            if not chunk:
                return None
            chunks.append(chunk)
            offset += len(chunk)
        return b"".join(chunks), st
    except OSError:
        return None
    finally:
        os.close(fd)
