"""Cold lexicon buckets built while a catch-up from empty still indexes its last sessions.

A catch-up builds the lexicon once the backlog is indexed: a bucket's segment is a long task
(a third of a second and more), and a few of them left for the end leave a worker idle while
the other finishes the last one. From empty, the cold set the publisher will plan is known
before the sessions are built (the backlog's cold jobs, when each builds), and so are its
buckets (``pipeline.lexicon``: a function of the cold set)::

    backlog ─► the cold jobs' buckets, cut as the plan will cut them
    order   ─► the cold jobs biggest first, then the hot ones (in no bucket) biggest first
    a bucket whose every session is built ─► its segment, queued ahead of the index units
                                              left (the hot sessions, the last cold ones)
    publish ─► the plan's buckets: one built early is taken, any other built then

So the long tasks start as soon as they can and the hot sessions' builds, in small pool
messages (``pipeline.pool``), fill in around them to the end: the workers finish together.

The plan alone decides what is published, so the index is the one a catch-up without
this publishes. A wrong guess (a session that failed, an old version the archive brought
back) leaves its bucket out, or costs a segment nothing lists (collected as garbage).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

from pipeline.lexicon import bucket_count, bucket_of
from pipeline.pool import BucketHandle, WorkerPool
from pipeline.session_job import Job, JobResult
from stages.tier import HOT

__all__ = ["EarlyBuckets"]


class EarlyBuckets:
    """The buckets of a backlog's cold sessions, each built as soon as its sessions are."""

    def __init__(
        self, pool: WorkerPool, index_dir: Path, jobs: Sequence[Job], sizes: Mapping[str, int]
    ) -> None:
        self.pool, self.index_dir = pool, index_dir
        cold = [j.path for j in jobs if j.tier != HOT]
        count = bucket_count(len(cold))
        self._bucket = {path: bucket_of(path, count) for path in cold}
        self._left = Counter(self._bucket.values())
        self._names: dict[int, list[str]] = {b: [] for b in self._left}
        self._off: set[int] = set()
        self._handles: dict[tuple[str, ...], BucketHandle] = {}

    def order(self, jobs: Sequence[Job], sizes: Mapping[str, int]) -> list[Job]:
        """*jobs* biggest first, the cold ones (in buckets) before the hot ones (in none):
        every bucket can be built while the hot sessions still are."""
        return sorted(jobs, key=lambda j: (j.path not in self._bucket, -sizes[j.path], j.path))

    def built(self, result: JobResult) -> None:
        """Count *result* in; queue its bucket's build when it was the bucket's last."""
        if result.retired or result.dropped:
            # sessions besides the backlog's own: the cold set is not the guess
            self._off.update(self._left)
        bucket = self._bucket.get(result.path)
        if bucket is None:
            return
        state = result.state
        if state is None or state.tier == HOT or state.archived:
            self._off.add(bucket)
        else:
            self._names[bucket].append(state.index_record)
        self._left[bucket] -= 1
        if self._left[bucket] or bucket in self._off:
            return
        digests = tuple(sorted(self._names[bucket]))
        handle = self.pool.submit_bucket(self.index_dir, digests, ahead=True)
        if handle is not None:
            self._handles[digests] = handle

    def take(self, digests: tuple[str, ...]) -> BucketHandle | None:
        """The build of exactly the bucket *digests*, if one was queued."""
        return self._handles.pop(digests, None)
