"""Tunables of the always-on pipeline (not index policy: nothing here changes a record).

Read once at the entry point (`pipeline run` flags) and passed to every process; tests shrink
the timers. The defaults favour an idle machine: scans and merges are rare, publishing is
prompt.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from pipeline.engine import EngineSettings

__all__ = ["RunSettings", "default_workers"]


def default_workers() -> int:
    return max(1, min(4, os.cpu_count() or 1))


@dataclass(frozen=True, slots=True)
class RunSettings:
    """Timers in seconds; sizes in events or bytes."""

    workers: int = field(default_factory=default_workers)
    # watcher
    tick_s: float = 0.02
    reconcile_s: float = 60.0
    classify_batch: int = 256
    max_pending_events: int = 20_000
    # index workers
    batch_events: int = 512
    # source bytes of one batch's events, about (a catch-up's ``maxSyncSourceBytes``)
    batch_bytes: int = 1 << 62
    flush_s: float = 0.5
    checkpoint_s: float = 1.0
    idle_min_s: float = 0.005
    idle_max_s: float = 0.05
    # An always-on worker that just started builds its most recently changed hot sessions
    # whole while idle, newest first, up to this many source bytes (and the engine's hot
    # capacity), so the first append to one takes the append path (IndexWorker.plan_warm)
    warm_bytes: int = 4 << 20
    # ...taking, all workers together, at most this share of one CPU: after a warm build of
    # d seconds a worker rests d * (1 - s) / s, s = warm_share / workers, so warming never
    # takes the CPUs a start's other processes (`query serve` loading, the first queries,
    # the agents themselves) need first
    warm_share: float = 0.25
    # publisher
    publish_min_s: float = 0.02
    publish_bytes_per_s: float = 20e6
    gc_interval_s: float = 30.0
    gc_grace_s: float = 120.0
    keep_generations: int = 3
    queue_size: int = 64
    # supervisor
    restart_min_s: float = 0.5
    restart_max_s: float = 30.0
    healthy_after_s: float = 60.0
    # A child's loop may legitimately spend minutes on one huge session, but its process
    # beats every ``alive_every_s`` from a thread of its own whatever the loop does: silence
    # past ``frozen_s`` means it is stopped or wedged in native code, and it is killed then,
    # not at ``stall_s`` (which stays the bound on one pass of its loop).
    stall_s: float = 600.0
    alive_every_s: float = 1.0
    frozen_s: float = 20.0
    shutdown_s: float = 10.0  # per phase: the workers, then the publisher
    engine: EngineSettings = field(default_factory=EngineSettings)

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise ValueError(f"workers must be at least 1, got {self.workers}")
        for name in ("tick_s", "reconcile_s", "flush_s", "publish_min_s", "shutdown_s"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive")
        if not 0 < self.warm_share <= 1:
            raise ValueError(f"warm_share must be in (0, 1], got {self.warm_share}")

    def warm_rest(self, took: float) -> float:
        """Seconds an index worker rests after a warm build of *took* seconds (``warm_share``
        of one CPU for all ``workers`` together)."""
        share = self.warm_share / self.workers
        return took * (1 - share) / share
