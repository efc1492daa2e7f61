"""Lexicon buckets built while a catch-up from empty still indexes (pipeline.early_lexicon):
the buckets are the plan's, a wrong guess is left out, and the index is the same."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pipeline import catchup, lexicon
from pipeline.catchup import catch_up
from pipeline.early_lexicon import EarlyBuckets
from pipeline.lexicon import LexiconKeeper, bucket_count, bucket_of
from pipeline.session_job import Job, JobResult
from stages.policy import Policy
from stages.tier import COLD, HOT
from store.config import Config
from store.reader import open_snapshot
from store.records import Manifest
from store.writer import StoreWriter
from tests.helpers import generated


class _Pool:
    """What EarlyBuckets asks of the pool: a bucket queued, a handle back."""

    def __init__(self) -> None:
        self.queued: list[tuple[str, ...]] = []

    def submit_bucket(self, index_dir: Path, bucket: tuple[str, ...], *, ahead: bool) -> Any:
        assert ahead  # before the index units still queued
        self.queued.append(bucket)
        return SimpleNamespace(bucket=bucket)


def _job(path: str, tier: str = COLD) -> Job:
    return Job(path, "pi", tier, Policy(), "/nowhere")


def _built(job: Job, name: str | None, *, tier: str = COLD) -> JobResult:
    state = None if name is None else SimpleNamespace(tier=tier, archived=False, index_record=name)
    return JobResult(job.path, job.agent, state, 0, 0)  # type: ignore[arg-type]


def test_a_bucket_is_queued_when_its_last_session_is_built_and_not_before(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(lexicon, "BUCKET_DIGESTS", 2)
    jobs = [_job(f"/s/{i}.jsonl") for i in range(8)] + [_job("/s/hot.jsonl", HOT)]
    sizes = {j.path: 100 + i for i, j in enumerate(jobs)}
    pool = _Pool()
    early = EarlyBuckets(pool, Path("/nowhere"), jobs, sizes)  # type: ignore[arg-type]
    count = bucket_count(8)
    ordered = early.order(jobs, sizes)
    # the cold sessions biggest first, then the hot one (the biggest, in no bucket)
    assert ordered == sorted(jobs[:-1], key=lambda j: -sizes[j.path]) + jobs[-1:]
    failed = next(j for j in ordered if j.tier == COLD)  # its bucket is left out
    names = {j.path: f"{i:064x}.digest" for i, j in enumerate(ordered)}
    expect: dict[int, list[str]] = {}
    for job in ordered:
        b = bucket_of(job.path, count)
        if job.tier == COLD and b != bucket_of(failed.path, count):
            expect.setdefault(b, []).append(names[job.path])
        early.built(_built(job, None if job is failed else names[job.path], tier=job.tier))
        # queued the moment its last session is in, never with one missing
        done = {b for b, ns in expect.items() if len(ns) == sum(
            1 for j in jobs if j.tier == COLD and bucket_of(j.path, count) == b)}  # fmt: skip
        assert set(pool.queued) == {tuple(sorted(expect[b])) for b in done}
    assert len(pool.queued) == count - 1
    for bucket in pool.queued:
        assert early.take(bucket) is not None
        assert early.take(bucket) is None  # taken once


def _portable(manifest: Manifest) -> Manifest:
    return replace(manifest, generation=0, created_ns=0, chunks=())


def _config_at(base: Path, config: Config, name: str) -> Config:
    return replace(config, memory=replace(config.memory, index_dir=base / name))


def bucketed_twins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Config, Config]:
    """A corpus whose cold sessions fall in several buckets, and two configurations over it
    with indexes of their own (built inline, then in a pool)."""
    monkeypatch.setattr(lexicon, "BUCKET_DIGESTS", 4)
    _, config = generated(tmp_path, sessions=20, mean_kb=4, seed=11, hot_sessions=3)
    return _config_at(tmp_path, config, "inline"), _config_at(tmp_path, config, "pool")


def test_a_catch_up_from_empty_takes_its_early_buckets_and_publishes_the_same_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a corpus whose cold sessions fall in several buckets
    inline, pooled = bucketed_twins(tmp_path, monkeypatch)
    taken: list[tuple[str, ...]] = []
    take = EarlyBuckets.take

    def counted(self: EarlyBuckets, digests: tuple[str, ...]) -> Any:
        found = take(self, digests)
        if found is not None:
            taken.append(digests)
        return found

    monkeypatch.setattr(EarlyBuckets, "take", counted)
    # When one catch-up runs inline (no early buckets) and one in worker processes
    assert catch_up(inline, processes=1).failed == 0
    assert not taken
    monkeypatch.setattr(catchup, "INLINE_BYTES", 0)
    assert catch_up(pooled, processes=2).failed == 0
    # Then every bucket of the pooled one was built early, and both indexes are the same
    a = open_snapshot(inline.index_dir).manifest
    b = open_snapshot(pooled.index_dir).manifest
    assert len(a.lexicon) > 1
    assert len(taken) == len(b.lexicon)
    assert _portable(a) == _portable(b)
    keeper = LexiconKeeper(StoreWriter(pooled.index_dir))
    assert [keeper.digests(s) for s in b.lexicon] == list(
        keeper.plan((), [s for s in b.sessions if s.tier != HOT]).buckets
    )


def test_the_order_is_biggest_first_the_hot_sessions_after_the_cold_ones() -> None:
    # (BUCKET_DIGESTS is 256: eight cold sessions make one bucket)
    jobs = [_job(f"/s/{i}.jsonl") for i in range(8)]
    jobs += [_job(f"/s/hot{i}.jsonl", HOT) for i in range(3)]
    sizes = {j.path: 100 + (i * 7) % 9 for i, j in enumerate(jobs)}
    early = EarlyBuckets(_Pool(), Path("/nowhere"), jobs, sizes)  # type: ignore[arg-type]
    by_size = sorted(jobs, key=lambda j: (-sizes[j.path], j.path))
    assert early.order(jobs, sizes) == [j for j in by_size if j.tier == COLD] + [
        j for j in by_size if j.tier == HOT
    ]
    assert max(sizes[j.path] for j in jobs if j.tier == HOT) > min(sizes.values())
