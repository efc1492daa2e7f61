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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import structlog

from pipeline.discovery import subagent_meta
from pipeline.session_job import Job, build_session, read_source
from stages.agents import adapter
from stages.appender import Delta, HotSession, asks_sidecar, commit, extend, hot_session
from stages.policy import Policy
from store.deltas import concat_entries, concat_shards
from store.errors import is_disk_full
from store.files import open_quietly
from store.reasons import INDEX_ERROR, SOURCE_UNAVAILABLE
from store.records import SessionState, SkippedFile, SourceEvent
from store.writer import StoreWriter

__all__ = [
    "DELETE",
    "REWRITE",
    "APPEND",
    "Change",
    "Drop",
    "EngineCounters",
    "EngineSettings",
    "SessionEngine",
    "Skip",
    "Upsert",
    "event_ctime",
    "event_hash",
]

log = structlog.get_logger()

APPEND, REWRITE, DELETE = "append", "rewrite", "delete"


@dataclass(frozen=True, slots=True)
class Upsert:
    state: SessionState


@dataclass(frozen=True, slots=True)
class Skip:
    skipped: SkippedFile


@dataclass(frozen=True, slots=True)
class Drop:
    path: str


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
        }


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
    ) -> None:
        self.index_dir = Path(index_dir)
        self.policy = policy
        self.settings = settings or EngineSettings()
        self.clock = clock
        self.writer = StoreWriter(self.index_dir)
        self.counters = EngineCounters()
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
        if last.kind == DELETE:
            self.forget(path)
            return Drop(path)
        hot = self._hot.get(path)
        if hot is not None:
            self._hot.move_to_end(path)
            state = hot.state
        if state is not None and state.tier == tier and _same_bytes(state, last):
            if (state.mtime_ns, state.ctime_ns) == (last.mtime_ns, event_ctime(last)):
                self.counters.unchanged += 1
                return None
            return self._restamp(path, agent, state, hot, tier)
        if (
            state is None
            or hot is None
            or state.tier != tier
            or any(e.kind == REWRITE for e in events)
            or adapter(agent).files.read_whole(path)  # saved whole each time: no line appends
        ):
            return self.whole(path, agent, tier)
        change = self._append(hot, last)
        if change is None:
            self.counters.declined += 1
            return self.whole(path, agent, tier)
        return change

    def whole(self, path: str, agent: str, tier: str) -> Change:
        """Index the session whole (every stage) and keep its hot state."""
        self.counters.whole += 1
        try:
            data, stamp = read_source(path)
        except (FileNotFoundError, NotADirectoryError):
            self.forget(path)
            return Drop(path)  # its delete event is on the way
        except OSError:
            self.forget(path)
            return Skip(SkippedFile(path, agent, SOURCE_UNAVAILABLE))
        job = Job(path, agent, tier, self.policy, str(self.index_dir))
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
        return Upsert(built.state)

    def merge(self, path: str, agent: str, tier: str) -> Change:
        """Fold a session's deltas into a new base (a whole build: the exact result)."""
        before = self.writer.bytes_written
        change = self.whole(path, agent, tier)
        self.counters.whole -= 1
        self.counters.merges += 1
        self.counters.merge_bytes += self.writer.bytes_written - before
        return change

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
        self, path: str, agent: str, state: SessionState, hot: HotSession | None, tier: str
    ) -> Change:
        """Same bytes, new stamp (a touch, a chmod): record the stamp the file has now."""
        try:
            st = os.stat(path, follow_symlinks=False)
        except OSError:
            return self.whole(path, agent, tier)
        if (st.st_dev, st.st_ino) != (state.dev, state.inode) or st.st_size < state.size:
            return self.whole(path, agent, tier)
        moved = replace(state, mtime_ns=st.st_mtime_ns, ctime_ns=st.st_ctime_ns)
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


def _same_bytes(state: SessionState, event: SourceEvent) -> bool:
    """True when *event* describes exactly the bytes *state* indexed."""
    return (state.dev, state.inode, state.size) == (
        event.dev,
        event.inode,
        event.end,
    ) and event_hash(event) == state.source_hash


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
