"""The catch-up run's worker processes: spawned once, used for every batch and the lexicon.

Spawning a pool and importing the stages in it costs a few hundred milliseconds, so a run
spawns one at the first work worth it and keeps it for every batch of sessions and then for
the cold lexicon's buckets. Small runs never spawn: the work is done in this process.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Final

from pipeline.lexicon import LexiconKeeper, build_bucket
from pipeline.session_job import Job, JobResult, index_session, index_sessions
from store.writer import StoreWriter

__all__ = ["UNITS_PER_WORKER", "WorkerPool"]

# Pool messages per worker, at least: the last one bounds how long a worker runs on alone.
UNITS_PER_WORKER: Final = 32


class WorkerPool:
    """Index jobs and lexicon buckets, in worker processes unless *inline*."""

    def __init__(self, processes: int | None, inline: bool) -> None:
        self.workers = max(1, processes or os.cpu_count() or 1)
        self.inline = inline
        self._pool: Any = None

    def _started(self) -> Any:
        if self._pool is None:
            import multiprocess  # deferred: spawning costs nothing until there is real work

            self._pool = multiprocess.get_context("spawn").Pool(self.workers)
        return self._pool

    def index(self, jobs: Sequence[Job], sizes: Mapping[str, int]) -> Iterator[JobResult]:
        """Every job's result, in the order they finish."""
        if self.inline or len(jobs) <= 1:
            yield from map(index_session, jobs)
            return
        units = _units(jobs, sizes, self.workers)
        for results in self._started().imap_unordered(index_sessions, units):
            yield from results

    def build_buckets(
        self, index_dir: Path, buckets: Sequence[tuple[str, ...]]
    ) -> list[tuple[str, int]]:
        """(segment name, bytes written) of each bucket, in order."""
        if self.inline or len(buckets) <= 1:
            keeper = LexiconKeeper(StoreWriter(index_dir))
            out = []
            for bucket in buckets:
                before = keeper.writer.bytes_written
                out.append((keeper.build(bucket), keeper.writer.bytes_written - before))
            return out
        args = [(str(index_dir), bucket) for bucket in buckets]
        built: list[tuple[str, int]] = self._started().starmap(build_bucket, args, chunksize=1)
        return built

    def submit_bucket(self, index_dir: Path, bucket: tuple[str, ...]) -> Any | None:
        """Start building one bucket while jobs still run (None when this pool is inline);
        the handle's ``get()`` gives (segment name, bytes written)."""
        if self.inline:
            return None
        return self._started().apply_async(build_bucket, (str(index_dir), bucket))

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool.join()
            self._pool = None

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc is not None and self._pool is not None:
            self._pool.terminate()
        self.close()


def _units(jobs: Sequence[Job], sizes: Mapping[str, int], workers: int) -> list[list[Job]]:
    """*jobs* (biggest first) in runs of consecutive jobs, one pool message each.

    The pool's parent threads wake for every result message, about 0.4 ms of parent CPU each
    (measured on the size-S bench), taken from the CPUs the workers need; so small sessions go
    several to a message. A run holds up to 1/``UNITS_PER_WORKER`` of a worker's share of the
    source bytes: a big session is a message of its own, and no message keeps one worker
    busy long after the others are done.
    """
    cap = max(1, sum(sizes[j.path] for j in jobs) // (workers * UNITS_PER_WORKER))
    units: list[list[Job]] = []
    unit: list[Job] = []
    used = 0
    for job in jobs:
        size = sizes[job.path]
        if unit and used + size > cap:
            units.append(unit)
            unit, used = [], 0
        unit.append(job)
        used += size
    if unit:
        units.append(unit)
    return units
