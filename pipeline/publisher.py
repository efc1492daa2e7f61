"""The publisher: every index worker's changes become generations, in one process.

::

    WorkerBatch(worker, position, changes) … ─► apply to the session map ─► manifest N+1
        ─► StoreWriter.publish (rate-limited by manifest size: a publish rewrites it whole)
        ─► checkpoint "publish" = the lowest position every worker has handed over, once
           everything up to it is published (a restart resumes after it)
        ─► collect garbage now and then

It holds the writer lock for its whole life, so no other writer can publish meanwhile.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Callable, Sequence
from typing import Final

import structlog

from pipeline.discovery import source_specs
from pipeline.engine import Drop, Skip, Upsert
from pipeline.lexicon import BucketBuilder, LexiconKeeper
from pipeline.pool import BackgroundBuilds
from pipeline.resume import PUBLISH_STAGE, resume_after, usable_manifest
from pipeline.settings import RunSettings
from pipeline.workers import Inbox, WorkerBatch
from stages.policy import Policy
from store.checkpoints import Checkpoint, CheckpointStore
from store.config import Config
from store.journal import Journal
from store.layout import IndexLayout
from store.records import Manifest, SessionState, SkippedFile
from store.writer import StoreWriter

__all__ = ["PUBLISH_VERSION", "Publisher"]

log = structlog.get_logger()

PUBLISH_VERSION: Final = 1


def _path(skipped: SkippedFile) -> str:
    return skipped.path


class Publisher:
    """Every worker's changes → generations; the publish checkpoint; garbage collection.

    The caller holds the writer lock for the publisher's lifetime.
    """

    name = PUBLISH_STAGE

    def __init__(
        self,
        config: Config,
        *,
        settings: RunSettings,
        inbox: Inbox,
        journal: Journal,
        policy: Policy,
        writer: StoreWriter,
        on_published: Callable[[int], None] = lambda position: None,
        clock: Callable[[], float] = time.monotonic,
        now_ns: Callable[[], int] = time.time_ns,
        background_lexicon: bool = False,
    ) -> None:
        """``background_lexicon``: build lexicon buckets in a worker process (a long-lived
        pipeline); otherwise one bucket per idle step, in this process."""
        self.config = config
        self.settings = settings
        self.inbox = inbox
        self.journal = journal
        self.policy = policy.fingerprint()
        self.writer = writer
        self.on_published = on_published
        self.clock = clock
        self.now_ns = now_ns
        self.checkpoints = CheckpointStore(IndexLayout(config.index_dir).checkpoints)
        self.sessions: dict[str, SessionState] = {}
        self._paths: list[str] = []  # the keys of self.sessions, sorted (a publish lists them so)
        self.skipped: dict[str, SkippedFile] = {}
        # a cold session came, went or changed since the lexicon was last planned
        self._cold_changed = True
        self.position = -1
        self.generations = 0
        self.last_published_ns: int | None = None
        self._boot_position = -1
        self._handed: dict[int, int] = {}
        self._dirty = False
        self._candidate = -1
        self._published_at = float("-inf")
        self._interval = settings.publish_min_s
        self._checkpointed = -1
        self._checkpoint_at = 0.0
        self._gc_at = 0.0
        self._primed = False
        self._since_gc = 0
        # a session was forgotten: the next publish drops it, and every generation before
        # that one is collected once the grace period has passed (not kept_generations)
        self._purge_wanted = False
        self._purge_at: float | None = None
        self.lexicon: tuple[str, ...] = ()
        self._lexicons = LexiconKeeper(writer)
        self._lexicon_todo: list[tuple[str, ...]] = []
        self._lexicon_built: list[str] = []
        self._background = BackgroundBuilds(config.index_dir) if background_lexicon else None

    def boot(self, now: float) -> None:
        manifest = usable_manifest(self.config.index_dir, self.policy)
        if manifest is not None:
            self.sessions = {s.path: s for s in manifest.sessions}
            self._paths = sorted(self.sessions)
            self.skipped = {k.path: k for k in manifest.skipped}
            self.lexicon = manifest.lexicon
            if not self.lexicon and any(s.tier != "hot" for s in manifest.sessions):
                self._dirty = True  # written before cold lexicons existed: add one
            if manifest.sources != source_specs(self.config.roots):
                self._dirty = True  # other source facts (an older release): record today's
        elif self.writer.current_generation():
            self._dirty = True  # built under another policy: stop serving it at once
        self.position = self._boot_position = resume_after(self.config.index_dir, self.journal)
        self._candidate = self.position
        self._checkpointed = self.position
        self._gc_at = now
        self._primed = False  # StoreWriter.prime, once, when first idle
        self.on_published(self.position)

    # -- the loop --------------------------------------------------------------------------

    def loop_once(self, now: float, *, wait: float = 0.0) -> bool:
        """Apply what the workers handed over and publish when due; True when busy."""
        got = 0
        if self._dirty and wait > 0:
            # a publish is due: wait for more batches only until it may happen
            wait = min(wait, max(0.0, self._published_at + self._interval - now))
        batch = self.inbox.get(wait)
        if wait > 0:
            # *now* was read before the wait: a batch that ended it is published on this pass
            # when its time has come, not after another wait on an empty queue
            now = max(now, self.clock())
        while batch is not None:
            self._apply(batch)
            got += 1
            batch = self.inbox.get(0)
        if got:
            workers = range(self.settings.workers)
            self._candidate = min(self._handed.get(w, self._boot_position) for w in workers)
        published = False
        if self._build_lexicon(idle=not got):
            got = got or 1
        if self._dirty and now - self._published_at >= self._interval:
            self._publish(now)
            published = True
        if not self._dirty and self._candidate > self.position:
            self.position = self._candidate
            self.on_published(self.position)
        self._checkpoint(now, idle=not got)
        overdue = now - self._gc_at >= 2 * self.settings.gc_interval_s
        if (not got and not published) or overdue:
            self._collect(now)
        if not got and not published and not self._primed:
            self._primed = True
            self.writer.prime()  # idle after the boot: the first publish then costs its changes
        return bool(got) or published

    def _apply(self, batch: WorkerBatch) -> None:
        self._handed[batch.worker] = max(self._handed.get(batch.worker, -1), batch.position)
        for change in batch.changes:
            if isinstance(change, Upsert):
                path = change.state.path
                if self.sessions.get(path) != change.state or path in self.skipped:
                    self._set(path, change.state)
                    self.skipped.pop(path, None)
                    self._dirty = True
            elif isinstance(change, Skip):
                path = change.skipped.path
                if path in self.sessions or self.skipped.get(path) != change.skipped:
                    self._forget(path)
                    self.skipped[path] = change.skipped
                    self._dirty = True
            elif isinstance(change, Drop) and (
                change.path in self.sessions or change.path in self.skipped
            ):
                self._forget(change.path)
                self.skipped.pop(change.path, None)
                self._dirty = True
                self._purge_wanted |= change.purge

    def _set(self, path: str, state: SessionState) -> None:
        old = self.sessions.get(path)
        if old is None:
            bisect.insort(self._paths, path)
        if state.tier != "hot" or (old is not None and old.tier != "hot"):
            self._cold_changed = True
        self.sessions[path] = state

    def _forget(self, path: str) -> None:
        old = self.sessions.pop(path, None)
        if old is None:
            return
        del self._paths[bisect.bisect_left(self._paths, path)]
        if old.tier != "hot":
            self._cold_changed = True

    def _publish(
        self, now: float, pending: Sequence[SkippedFile] = (), reasons: tuple[str, ...] = ()
    ) -> None:
        generation = self.writer.current_generation() + 1
        before = self.writer.bytes_written
        if self._cold_changed or self._lexicon_built:
            # An append to a hot session (the common publish) leaves the buckets as planned.
            plan = self._lexicons.plan(
                [*self.lexicon, *self._lexicon_built],
                (s for s in self.sessions.values() if s.tier != "hot"),
            )
            self.lexicon = plan.segments
            building = self._background.building if self._background is not None else None
            self._lexicon_todo = [b for b in plan.todo if b != building]
            self._lexicon_built = []
            self._cold_changed = False
        manifest = Manifest(
            generation=generation,
            created_ns=self.now_ns(),
            policy=self.policy,
            roots={agent: str(root) for agent, root in self.config.roots.items()},
            hot_sessions=self.config.memory.hot_sessions,
            sessions=tuple(map(self.sessions.__getitem__, self._paths)),
            skipped=tuple(
                sorted({**{k.path: k for k in pending}, **self.skipped}.values(), key=_path)
            ),
            reasons=reasons,
            lexicon=self.lexicon,
            sources=source_specs(self.config.roots),
        )
        self.writer.publish(manifest)
        if self._purge_wanted:
            self._purge_wanted = False
            self._purge_at = time.time() + self.settings.gc_grace_s
        written = self.writer.bytes_written - before
        self._dirty = False
        self._published_at = now
        self.generations += 1
        self._since_gc += 1
        self.last_published_ns = manifest.created_ns
        # What a publish writes (changed chunks, the manifest of chunk names) sets the pace.
        self._interval = max(
            self.settings.publish_min_s, written / self.settings.publish_bytes_per_s
        )
        log.info(
            "generation.published",
            generation=generation,
            sessions=len(self.sessions),
            position=self._candidate,
        )

    def _checkpoint(self, now: float, *, idle: bool) -> None:
        if self.position == self._checkpointed:
            return
        if not idle and now - self._checkpoint_at < self.settings.checkpoint_s:
            return
        self.checkpoints.write(
            Checkpoint(PUBLISH_STAGE, PUBLISH_VERSION, self.position, time.time_ns())
        )
        self._checkpointed = self.position
        self._checkpoint_at = now

    def _collect(self, now: float) -> None:
        purging = self._purge_at is not None
        if (not self._since_gc and not purging) or now - self._gc_at < self.settings.gc_interval_s:
            return
        wall = time.time()
        report = self.writer.collect_garbage(
            keep_generations=1 if purging else self.settings.keep_generations,
            grace_seconds=self.settings.gc_grace_s,
            now=wall,
        )
        if self._purge_at is not None and wall >= self._purge_at:
            self._purge_at = None  # every generation that named a forgotten session is gone
        self._gc_at = now
        self._since_gc = 0
        log.info(
            "store.collected",
            bytes_freed=report.bytes_freed,
            records=report.records_deleted,
            manifests=report.manifests_deleted,
        )

    def _build_lexicon(self, *, idle: bool) -> bool:
        """Move the missing lexicon buckets along; True when that is work still going on.

        A built bucket is published like any change. In the background one bucket builds
        at a time while publishing goes on; in this process, one bucket per idle step.
        """
        background = self._background
        if background is not None:
            name = background.poll()
            if name is not None:
                self._lexicon_built.append(name)
                self._dirty = True
            again = background.due()
            if again is not None and again not in self._lexicon_todo:
                # a replan since the failure may have replaced it; building it anyway only
                # costs a segment the next plan ignores
                self._lexicon_todo.insert(0, again)
            if not background.busy and self._lexicon_todo:
                background.submit(self._lexicon_todo.pop(0))
            return background.busy
        if idle and self._lexicon_todo:
            self._lexicon_built.append(self._lexicons.build(self._lexicon_todo.pop(0)))
            self._dirty = True
            return True
        return False

    def flush(self, now: float) -> None:
        """Publish what is pending and write the checkpoint now (at shutdown)."""
        if self._background is not None and self._background.busy:
            name = self._background.poll(timeout=None)
            if name is not None:
                self._lexicon_built.append(name)
                self._dirty = True
        while self._lexicon_todo:
            self._lexicon_built.append(self._lexicons.build(self._lexicon_todo.pop(0)))
            self._dirty = True
        if self._dirty:
            self._publish(now)
        if self._candidate > self.position:
            self.position = self._candidate
            self.on_published(self.position)
        self._checkpoint(now, idle=True)

    def take(self) -> bool:
        """Apply what the workers handed over, without publishing; True when there was any."""
        got = False
        batch = self.inbox.get(0)
        while batch is not None:
            self._apply(batch)
            got = True
            batch = self.inbox.get(0)
        if got:
            workers = range(self.settings.workers)
            self._candidate = min(self._handed.get(w, self._boot_position) for w in workers)
        return got

    def publish_pending(self, now: float, pending: Sequence[tuple[str, str]], reason: str) -> None:
        """Publish what was handed over while a catch-up still has work: the sessions not
        indexed yet are named skipped with *reason* (and so is the generation), the lexicon
        is what is built (a digest no segment covers answers from its own vocabulary)."""
        self.take()
        cold = [s for s in self.sessions.values() if s.tier != "hot"]
        self.lexicon = self._lexicons.plan([*self.lexicon, *self._lexicon_built], cold).segments
        self._lexicon_todo, self._lexicon_built = [], []
        self._cold_changed = False
        waiting = [SkippedFile(p, a, reason) for p, a in pending if p not in self.sessions]
        self._publish(now, waiting, (reason,))
        self._dirty = True  # the last generation names them no more

    def finish(
        self, now: float, build_all: BucketBuilder | None = None, *, first: bool = False
    ) -> int | None:
        """Publish what was handed over in one generation with its whole lexicon (the
        missing buckets built by *build_all*, else here), and checkpoint: how a catch-up
        ends (*first*: publish even an empty index, so there is one). Returns the generation
        published, None when nothing changed."""
        self.take()
        published = None
        if self._dirty or (first and not self.writer.current_generation()):
            cold = [s for s in self.sessions.values() if s.tier != "hot"]
            known = [*self.lexicon, *self._lexicon_built]
            self.lexicon = self._lexicons.complete(known, cold, build_all)
            self._lexicon_todo, self._lexicon_built = [], []
            self._cold_changed = False
            self._publish(now)
            published = self.writer.current_generation()
        if self._candidate > self.position:
            self.position = self._candidate
            self.on_published(self.position)
        self._checkpoint(now, idle=True)
        return published

    def close(self) -> None:
        """Stop the background lexicon builds (after ``flush``)."""
        if self._background is not None:
            self._background.close()

    def statistics(self) -> dict[str, object]:
        return {
            "position": self.position,
            "generation": self.writer.current_generation(),
            "generations": self.generations,
            "lastPublishedNs": self.last_published_ns,
            "bytesWritten": self.writer.bytes_written,
        }
