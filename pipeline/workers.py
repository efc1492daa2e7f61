"""Index workers: the five stages per session, for one shard of the sessions.

::

    journal ──► IndexWorker k of n   reads every event (the tier map needs them all) and
                                     handles the sessions whose path hashes to k:
                  group a batch by session ─► tier (global, by mtime) ─► SessionEngine
                  (parse → lineage → normalize → digest; appends as deltas) ─► changes
                        │  WorkerBatch(worker, position, changes)   bounded queue: a full
                        ▼                                           queue blocks the worker
                Publisher (pipeline.publisher) ─► manifest N+1 ─► publish
                            checkpoint "publish" = min over workers of the position each
                            has handed over, once everything up to it is published
                            ─► collect garbage now and then

Only the publisher's checkpoint is where a restart resumes: a worker's output is durable
once published, so its own checkpoint ("index-k") only says how far it has handed over.
Replaying an event whose result is already published is a no-op (the engine sees the same
bytes). A session's stages stay in one process because the append path needs the session's
shape in memory; parallelism comes from sharding sessions across workers.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Final, Protocol

import blake3
import structlog

from pipeline import scrub
from pipeline.archiving import archive_of
from pipeline.engine import (
    DELETE,
    FORGET,
    UNREADABLE,
    Builder,
    Change,
    Drop,
    SessionEngine,
    Skip,
    Upsert,
)
from pipeline.quarantine import Breadcrumb, Quarantined
from pipeline.resume import resume_after, usable_manifest
from pipeline.session_job import waits_to_settle
from pipeline.settings import RunSettings
from stages.agents import adapter
from stages.policy import Policy
from stages.tier import COLD, HOT, assign_tiers
from store.archive import source_of
from store.checkpoints import Checkpoint, CheckpointStore
from store.config import Config
from store.journal import Journal
from store.layout import IndexLayout
from store.reasons import INDEX_ERROR, PARTIAL_LINE
from store.records import SessionState, SkippedFile, SourceEvent

__all__ = ["INDEX_VERSION", "Inbox", "IndexWorker", "Outbox", "WorkerBatch", "shard_of"]

log = structlog.get_logger()

INDEX_VERSION: Final = 1
# How often an idle worker checks the records of one more of its sessions (pipeline.scrub).
SCRUB_EVERY_S: Final = 1.0


def _within(events: list[SourceEvent], budget: int) -> list[SourceEvent]:
    """The first of *events* whose files hold up to *budget* bytes (one at least)."""
    used = 0
    for n, e in enumerate(events):
        used += e.end
        if used > budget and n:
            return events[:n]
    return events


def shard_of(path: str, workers: int) -> int:
    """The worker that owns *path* (stable across restarts and machines); an old version
    kept from the archive belongs with the session it came from."""
    digest = blake3.blake3(source_of(path).encode("utf-8", "surrogateescape")).digest()
    return int.from_bytes(digest[:8], "little") % workers


@dataclass(frozen=True, slots=True)
class WorkerBatch:
    """Changes of one worker; every event up to ``position`` is handled in this or earlier
    batches."""

    worker: int
    position: int
    changes: tuple[Change, ...]


class Outbox(Protocol):
    def put(self, batch: WorkerBatch) -> None:
        """Hand *batch* over, waiting while the receiver is full (backpressure)."""


class Inbox(Protocol):
    def get(self, timeout: float) -> WorkerBatch | None:
        """The next batch, waiting up to *timeout* seconds (0: do not wait)."""


class IndexWorker:
    """One shard of sessions, from journal events to changes."""

    def __init__(
        self,
        config: Config,
        *,
        worker_id: int,
        settings: RunSettings,
        journal: Journal,
        outbox: Outbox,
        policy: Policy,
        clock: Callable[[], float] = time.monotonic,
        breadcrumb: Breadcrumb | None = None,
        quarantine: Mapping[str, Quarantined] | None = None,
        builder: Builder | None = None,
    ) -> None:
        """*builder*: whole builds of a batch run ahead of time with it (``SessionEngine``)."""
        self.config = config
        # where the supervisor finds the session this worker died on (pipeline.quarantine)
        self.breadcrumb = breadcrumb
        self.quarantine = dict(quarantine or {})
        self.worker_id = worker_id
        self.workers = settings.workers
        self.settings = settings
        self.journal = journal
        self.outbox = outbox
        self.policy = policy
        self.clock = clock
        self.name = f"index-{worker_id}"
        self.engine = SessionEngine(
            config.index_dir,
            policy,
            settings=settings.engine,
            clock=clock,
            archive=archive_of(config),
            builder=builder,
        )
        self.checkpoints = CheckpointStore(IndexLayout(config.index_dir).checkpoints)
        self.position = -1
        self.position_at_boot = -1
        self.states: dict[str, SessionState] = {}
        # the paths of states with deltas: what merges look at (not every session, per loop)
        self._deltas: set[str] = set()
        # the paths of states whose last line waited for its newline (``partial_line``)
        self._waiting: set[str] = set()
        # the scrub's round: the paths left to check, and when it checks the next one
        self._unscrubbed: list[str] = []
        self._scrub_at = 0.0
        self._layout = IndexLayout(config.index_dir)
        self.skipped: dict[str, SkippedFile] = {}
        self.mtimes: dict[str, int] = {}
        self.events = 0
        self._tiers: dict[str, str] = {}
        self._boundary: tuple[float, str] | None = None
        self._retier_pending = False
        self._pending: set[str] = set()
        # archived sessions to drop at start: the archive is no longer kept ([archive] keep)
        self._unkept: list[str] = []
        self._checkpointed = -1
        self._checkpoint_at = 0.0
        # sessions to give hot state while idle, next first (``plan_warm``)
        self._unwarmed: list[str] = []
        self._warm_at = 0.0  # the clock reading before which warming rests (``warm_share``)

    def boot(self) -> None:
        manifest = usable_manifest(self.config.index_dir, self.policy.fingerprint())
        if manifest is not None:
            for s in manifest.sessions:
                if s.archived:
                    # no file: cold, outside the hot set's order (as `run --once` places it)
                    if self.owns(s.path):
                        self.states[s.path] = s
                        if self.engine.keeper is None:
                            self._unkept.append(s.path)
                    continue
                self.mtimes[s.path] = s.mtime_ns
                if self.owns(s.path):
                    self.states[s.path] = s
                    if s.index_deltas:
                        self._deltas.add(s.path)
                    self._note_waiting(s)
            self.skipped = {k.path: k for k in manifest.skipped if self.owns(k.path)}
        self.position = resume_after(self.config.index_dir, self.journal)
        self.position_at_boot = self.position  # published already when this worker started
        self._checkpointed = self.position
        # The events not yet published place their sessions in the hot set too: a backlog
        # (a catch-up, a restart after a while) is tiered once, not batch by batch.
        self._pending = self._seed_pending()
        self._retier_all()
        # hotSessions may have changed since the manifest was published
        self._retier_pending = True

    def _seed_pending(self) -> set[str]:
        """Take the mtimes of every event after the published position; the paths named."""
        named: set[str] = set()
        after = self.position
        while events := self.journal.read(after, limit=4096):
            for e in events:
                named.add(e.path)
                if e.kind in (DELETE, FORGET, UNREADABLE):  # no session (any more)
                    self.mtimes.pop(e.path, None)
                else:
                    self.mtimes[e.path] = e.mtime_ns
            after = events[-1].position
        return named

    def owns(self, path: str) -> bool:
        return shard_of(path, self.workers) == self.worker_id

    def plan_warm(self) -> None:
        """After ``boot``, in an always-on worker: the hot sessions it owns that changed last,
        newest first, within ``settings.warm_bytes`` and the engine's hot capacity, to build
        whole while idle (``warming``). A fresh worker holds no session's hot state, so
        without this the first append to each session after a start is a whole build, and
        the first append after a start waits on it (issue 22 item 11). A session saved whole
        each time never takes the append path: it is not warmed."""
        budget = self.settings.warm_bytes
        hot = [
            s
            for s in self.states.values()
            if self._tiers.get(s.path, s.tier) == HOT
            and not s.archived
            and not adapter(s.agent).files.read_whole(s.path)
        ]
        hot.sort(key=lambda s: (-s.mtime_ns, s.path))
        planned: list[str] = []
        for state in hot[: self.engine.settings.hot_capacity]:
            if state.size <= budget:
                planned.append(state.path)
                budget -= state.size
        self._unwarmed = planned[::-1]  # popped from the end: newest first

    def warming(self) -> bool:
        """True while sessions planned by ``plan_warm`` are still to be built."""
        return bool(self._unwarmed)

    # -- the loop --------------------------------------------------------------------------

    def loop_once(self, now: float) -> bool:
        """Handle the next journal batch, else one merge, else warm one session when its pace
        allows (``warm_share``); True when it did something."""
        if self._retier_pending:
            self._retier_pending = False
            # a session with an event on the way is built at its new tier by that event
            changes = self._retier(self._tiers, skip=self._pending)
            self._pending = set()
            for path in self._unkept:
                change = Drop(path)
                self._record(change)
                changes.append(change)
            self._unkept = []
            if changes:
                self._send(self.position, changes)
                return True
        events = _within(
            self.journal.read(self.position, limit=self.settings.batch_events),
            self.settings.batch_bytes,
        )
        if events:
            self._handle(events)
            self._maintain(now, urgent_only=True)
            self._checkpoint(now, idle=False)
            return True
        if self._maintain(now):
            return True
        if self.engine.keeper is not None:
            self.engine.keeper.measure_ahead()  # not on the next append
        started = self.clock()
        if started >= self._warm_at and self._warm_one():
            ended = self.clock()
            self._warm_at = ended + self.settings.warm_rest(ended - started)
            return True
        self._checkpoint(now, idle=True)
        return False

    def _warm_one(self) -> bool:
        """Build the next planned session whole (``plan_warm``); True when one was. Its new
        state is sent only when it differs from the published one (deltas folded, a tail
        that settled meanwhile): a whole build is what a rebuild makes, either way."""
        while self._unwarmed:
            path = self._unwarmed.pop()
            state = self.states.get(path)
            tier = self._tiers.get(path)
            if (
                state is None
                or tier != HOT
                or state.tier != HOT
                or self.engine.is_hot(path)
                or self._quarantined(path)
            ):
                continue  # changed, moved or dropped since the plan, or warm already
            self._working_on(path)
            change = self.engine.warm(path, state.agent, tier)
            self._done_with()
            extra = self._extra()
            if extra or change != Upsert(state):
                self._record(change)
                self._send(self.position, [change, *extra])
            log.debug("session.warmed", path=path, changed=change != Upsert(state))
            return True
        return False

    def _handle(self, events: list[SourceEvent]) -> None:
        started = time.perf_counter()
        groups: dict[str, list[SourceEvent]] = {}
        moved = False
        for e in events:
            moved |= self._move(e)
            if self.owns(e.path):
                groups.setdefault(e.path, []).append(e)
        self.events += len(events)
        if moved:
            self._retier_all()
        tiers = self._tiers
        if self.engine.builder is not None:
            self.engine.prebuild(
                [
                    (path, group[-1].agent, tiers.get(path, COLD), group[-1].end)
                    for path, group in groups.items()
                    if not self._quarantined(path)
                    and self.engine.builds_whole(
                        group, self.states.get(path), tiers.get(path, COLD)
                    )
                ]
            )
        changes: list[Change] = []
        flushed = self.clock()
        for path, group in groups.items():
            agent = group[-1].agent
            if self._quarantined(path):
                change: Change | None = Skip(SkippedFile(path, agent, INDEX_ERROR))
            else:
                self._working_on(path)
                state = self.states.get(path)
                change = self.engine.apply(path, agent, group, state, tiers.get(path, COLD))
                self._done_with()
            if change is not None:
                self._record(change)
                changes.append(change)
            changes += self._extra()
            if changes and self.clock() - flushed >= self.settings.flush_s:
                # A long batch (a backlog of whole builds) still publishes as it goes.
                self._send(self.position, changes)
                changes, flushed = [], self.clock()
        if moved:
            changes += self._retier(tiers)
        self.position = events[-1].position
        self._send(self.position, changes)
        # Every worker reads every event: only the one that owns a session logs at info.
        (log.info if groups else log.debug)(
            "stage.index.done",
            worker=self.worker_id,
            position=self.position,
            events=len(events),
            sessions=len(groups),
            changes=len(changes),
            seconds=round(time.perf_counter() - started, 4),
        )

    def _move(self, event: SourceEvent) -> bool:
        """Record the event's mtime; True when the set of hot sessions may have changed.

        Most events are appends to a session that is already hot (its mtime only grows), so
        the global order is recomputed only when a session could cross the boundary.
        """
        path = event.path
        before = self.mtimes.get(path)
        hot = self._tiers.get(path) == HOT
        if event.kind in (DELETE, FORGET, UNREADABLE):
            self.mtimes.pop(path, None)
            self._tiers.pop(path, None)
            return hot
        self.mtimes[path] = event.mtime_ns
        if hot:
            return before is None or event.mtime_ns < before  # could fall behind
        if self._boundary is None or (-event.mtime_ns, path) < self._boundary:
            return True  # fewer sessions than hot slots, or it overtakes the last hot one
        self._tiers[path] = COLD
        return False

    def _retier_all(self) -> None:
        self._tiers = assign_tiers(self.mtimes.items(), self.config.memory.hot_sessions)
        hot = [(-self.mtimes[p], p) for p, t in self._tiers.items() if t == HOT]
        full = len(hot) >= self.config.memory.hot_sessions
        # The key of the last hot session; None while every session fits in the hot set.
        self._boundary = max(hot) if full and hot else None
        if self.config.memory.hot_sessions == 0:
            self._boundary = (float("-inf"), "")

    def _retier(self, tiers: dict[str, str], skip: Collection[str] = ()) -> list[Change]:
        """Rebuild sessions whose tier moved (the new record is stored before the manifest
        stops naming the old one), but those in *skip*."""
        changes: list[Change] = []
        moved = [
            (path, state.agent, tiers[path], state.size)
            for path, state in sorted(self.states.items())
            if path not in skip and tiers.get(path, state.tier) != state.tier
        ]
        self.engine.prebuild(moved)
        for path, state in sorted(self.states.items()):
            if path in skip:
                continue
            want = tiers.get(path)
            if want is not None and want != state.tier:
                self._working_on(path)
                change = self.engine.whole(path, state.agent, want)
                self._done_with()
                self._record(change)
                changes.append(change)
                changes += self._extra()
                log.info("session.retiered", path=path, tier=want)
        return changes

    def _maintain(self, now: float, *, urgent_only: bool = False) -> bool:
        """One merge of a session's deltas into a new base, when one is due (when busy, only
        one whose deltas passed twice the merge threshold)."""
        with_deltas = {p: self.states[p] for p in self._deltas}
        for path in self.engine.merges_due(now, with_deltas, urgent_only=urgent_only):
            state = self.states[path]
            self._working_on(path)
            change = self.engine.merge(path, state.agent, self._tiers.get(path, state.tier))
            self._done_with()
            self._record(change)
            self._send(self.position, [change, *self._extra()])
            log.info("session.merged", path=path, deltas=len(state.index_deltas))
            return True
        if urgent_only:
            return False
        for path in sorted(self._waiting):
            state = self.states[path]
            if not waits_to_settle(state):
                continue
            # its file went quiet with a last line still waiting: a whole build reads it
            self._build_again(state, "session.settled")
            return True
        return self._scrub(now)

    def _scrub(self, now: float) -> bool:
        """Check one session's records (``pipeline.scrub``), every ``SCRUB_EVERY_S`` when
        idle, in turn; one found damaged is built again. True when it was."""
        if now < self._scrub_at:
            return False
        self._scrub_at = now + SCRUB_EVERY_S
        if not self._unscrubbed:
            self._unscrubbed = sorted(self.states, reverse=True)
        while self._unscrubbed:
            state = self.states.get(self._unscrubbed.pop())
            if state is None:
                continue
            if not scrub.repair(self._layout, state):
                return False
            self._build_again(state, "session.scrubbed")
            return True
        return False

    def _note_waiting(self, state: SessionState) -> None:
        if any(PARTIAL_LINE in v.reasons for v in state.views):
            self._waiting.add(state.path)
        else:
            self._waiting.discard(state.path)

    def scrub_turn(self) -> None:
        """Check the records of the sessions whose turn it is (``pipeline.scrub.due``: all of
        them within ``SLICES`` turns of catch-up runs) and build the damaged ones again."""
        for path in sorted(self.states):
            state = self.states[path]
            if not scrub.due(path) or not scrub.repair(self._layout, state):
                continue
            self._build_again(state, "session.scrubbed")

    def _build_again(self, state: SessionState, event: str) -> None:
        """Build one known session whole at its tier and send the change (a settled tail or
        damaged records: what it holds is read from its file again)."""
        self._working_on(state.path)
        tier = self._tiers.get(state.path, state.tier)
        change = self.engine.whole(state.path, state.agent, tier)
        self._done_with()
        self._record(change)
        self._send(self.position, [change, *self._extra()])
        log.info(event, path=state.path)

    def fold_deltas(self) -> None:
        """Merge every session's deltas now (a catch-up publishes no deltas: its index is
        byte for byte what a replay from empty makes)."""
        for path in sorted(self._deltas):
            state = self.states[path]
            self._working_on(path)
            change = self.engine.merge(path, state.agent, self._tiers.get(path, state.tier))
            self._done_with()
            self._record(change)
            self._send(self.position, [change, *self._extra()])

    def _extra(self) -> list[Change]:
        """Changes the engine made to other sessions on the way (retired old versions)."""
        extra, self.engine.extra = self.engine.extra, []
        for change in extra:
            self._record(change)
        return extra

    def _working_on(self, path: str) -> None:
        # Left set when the work raises: a session that crashes the worker is still named.
        if self.breadcrumb is not None:
            self.breadcrumb.set(path)

    def _done_with(self) -> None:
        if self.breadcrumb is not None:
            self.breadcrumb.clear()

    def _quarantined(self, path: str) -> bool:
        """True for a session that killed this shard's worker each time it was indexed, as
        long as its file has not changed since (then it gets another chance)."""
        held = self.quarantine.get(path)
        if held is None:
            return False
        if not held.holds(path):
            del self.quarantine[path]
            return False
        self.engine.forget(path)
        if path not in self.skipped:
            log.error(
                "session.quarantined",
                path=path,
                crashes=held.crashes,
                cause=held.how,
                reason=INDEX_ERROR,
            )
        return True

    def _record(self, change: Change) -> None:
        if isinstance(change, Upsert):
            self.states[change.state.path] = change.state
            self.skipped.pop(change.state.path, None)
            if change.state.index_deltas:
                self._deltas.add(change.state.path)
            else:
                self._deltas.discard(change.state.path)
            self._note_waiting(change.state)
        elif isinstance(change, Skip):
            self.states.pop(change.skipped.path, None)
            self.skipped[change.skipped.path] = change.skipped
            self._deltas.discard(change.skipped.path)
            self._waiting.discard(change.skipped.path)
        else:
            self.states.pop(change.path, None)
            self.skipped.pop(change.path, None)
            self._deltas.discard(change.path)
            self._waiting.discard(change.path)

    def _send(self, position: int, changes: Iterable[Change]) -> None:
        self.outbox.put(WorkerBatch(self.worker_id, position, tuple(changes)))

    def _checkpoint(self, now: float, *, idle: bool) -> None:
        if self.position == self._checkpointed:
            return
        if not idle and now - self._checkpoint_at < self.settings.checkpoint_s:
            return
        self.checkpoints.write(Checkpoint(self.name, INDEX_VERSION, self.position, time.time_ns()))
        self._checkpointed = self.position
        self._checkpoint_at = now

    def flush(self, now: float) -> None:
        """Write the checkpoint now (at shutdown)."""
        self._checkpoint(now, idle=True)

    def statistics(self) -> dict[str, object]:
        return {
            "position": self.position,
            "sessions": len(self.states),
            "events": self.events,
            "bytesWritten": self.engine.writer.bytes_written,
            **self.engine.counters.as_dict(),
        }
