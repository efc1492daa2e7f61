"""The inline runner: watcher, one index worker and the publisher stepped in one process.

::

    step():  watcher.loop_once ─► journal ─► worker.loop_once ─► mailbox ─► publisher.loop_once

The same objects and loops as the process supervisor, without processes: tests drive it with
a fake clock, and it measures what the pipeline writes without counting across processes.
"""

from __future__ import annotations

import contextlib
import time
from collections import deque
from collections.abc import Callable
from dataclasses import replace

from pipeline.engine import Builder, policy_of
from pipeline.publisher import Publisher
from pipeline.resume import journal_start
from pipeline.settings import RunSettings
from pipeline.watcher import Watcher
from pipeline.workers import IndexWorker, WorkerBatch
from store.config import Config
from store.journal import FileJournal, Journal
from store.layout import IndexLayout
from store.writer import StoreWriter

__all__ = ["InlineRunner", "Mailbox"]


class Mailbox:
    """An in-process outbox and inbox (unbounded: the runner drains it every step)."""

    def __init__(self) -> None:
        self._items: deque[WorkerBatch] = deque()

    def put(self, batch: WorkerBatch) -> None:
        self._items.append(batch)

    def get(self, timeout: float) -> WorkerBatch | None:
        return self._items.popleft() if self._items else None


class InlineRunner:
    """The whole always-on pipeline in this process, one step at a time."""

    def __init__(
        self,
        config: Config,
        settings: RunSettings | None = None,
        *,
        journal: Journal | None = None,
        clock: Callable[[], float] = time.monotonic,
        mailbox: Mailbox | None = None,
        builder: Builder | None = None,
        now_ns: Callable[[], int] = time.time_ns,
        hash_new: bool = True,
        writer: StoreWriter | None = None,
    ) -> None:
        """*builder*: where the worker's whole builds run (``pipeline.catchup``'s pool);
        *hash_new*: whether the watcher hashes files nothing is known of (``Watcher``);
        *writer*: the publisher's (one the builder stages chunk records with)."""
        self.config = config
        self.settings = replace(settings or RunSettings(), workers=1)
        self.clock = clock
        policy = policy_of(config)
        layout = IndexLayout(config.index_dir)
        self.journal = journal or FileJournal(
            layout.journal, writable=True, start_at=journal_start(config.index_dir)
        )
        self.writer = writer or StoreWriter(config.index_dir)
        self.mailbox = mailbox or Mailbox()
        self.publisher = Publisher(
            config,
            settings=self.settings,
            inbox=self.mailbox,
            journal=self.journal,
            policy=policy,
            writer=self.writer,
            clock=clock,
            now_ns=now_ns,
        )
        self.worker = IndexWorker(
            config,
            worker_id=0,
            settings=self.settings,
            journal=self.journal,
            outbox=self.mailbox,
            policy=policy,
            clock=clock,
            builder=builder,
        )
        self.watcher = Watcher(
            config,
            self.journal,
            policy=policy.fingerprint(),
            published=lambda: self.publisher.position,
            settings=self.settings,
            clock=clock,
            hash_new=hash_new,
        )
        self._stack = contextlib.ExitStack()

    def __enter__(self) -> InlineRunner:
        self._stack.enter_context(self.writer.lock())
        now = self.clock()
        self.publisher.boot(now)
        self.worker.boot()
        self.watcher.boot()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()
        self.journal.close()

    def notice(self, *paths: str) -> None:
        """What an observer would do: mark paths as changed."""
        for path in paths:
            self.watcher.mark(path)

    def step(self) -> bool:
        now = self.clock()
        busy = self.watcher.loop_once(now)
        busy |= self.worker.loop_once(now)
        busy |= self.publisher.loop_once(now)
        return busy

    def run_until_idle(self, max_steps: int = 100_000) -> int:
        """Step until nothing is left to do, then publish what is pending; returns steps."""
        for steps in range(1, max_steps + 1):
            if not self.step():
                self.publisher.flush(self.clock())
                return steps
        raise RuntimeError(f"the pipeline did not go idle in {max_steps} steps")

    def written(self) -> dict[str, int]:
        """Every byte the pipeline wrote so far, by kind of file."""
        return {
            "records": self.worker.engine.writer.bytes_written,
            "manifests": self.writer.bytes_written,
            "journal": self.journal.bytes_written,
            "checkpoints": self.worker.checkpoints.bytes_written
            + self.publisher.checkpoints.bytes_written,
        }

    def bytes_written(self) -> int:
        return sum(self.written().values())
