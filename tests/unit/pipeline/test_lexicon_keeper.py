"""Lexicon buckets: a function of the cold digests only, so history never shows in the files."""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path

import blake3
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.lexicon import BUCKET_DIGESTS, LexiconKeeper, bucket_count
from store.lexicon import IN_ACTIVE, DigestVocabulary, LexiconSegment
from store.records import ColdDigest, SessionState
from store.writer import StoreWriter
from tests.unit.store.factories import state


def name(i: int) -> str:
    return blake3.blake3(str(i).encode()).hexdigest() + ".digest"


def vocabulary(digest: str) -> DigestVocabulary:
    # a few terms shared by all, one only this digest holds
    return DigestVocabulary(digest, b"\n".join(sorted([b"common", digest[:12].encode()])))


def cold(numbers: list[int]) -> list[SessionState]:
    return [state(f"/s/{i}.jsonl", name(i), "e" * 64 + ".entries", tier="cold") for i in numbers]


def keeper(tmp: Path) -> LexiconKeeper:
    return LexiconKeeper(StoreWriter(tmp), vocabulary=vocabulary)


def test_bucket_count_doubles_with_the_cold_tier() -> None:
    assert bucket_count(0) == bucket_count(BUCKET_DIGESTS) == 1
    assert bucket_count(BUCKET_DIGESTS + 1) == 2
    assert bucket_count(5 * BUCKET_DIGESTS) == 8


@settings(max_examples=25, deadline=None)
@given(
    steps=st.lists(st.sets(st.integers(0, 700), max_size=600), min_size=1, max_size=4),
)
def test_segments_depend_on_the_cold_set_not_on_history(
    tmp_path_factory: pytest.TempPathFactory, steps: list[set[int]]
) -> None:
    base = tmp_path_factory.mktemp("k")
    live = keeper(base / "live")
    segments: tuple[str, ...] = ()
    for step in steps:
        segments = live.complete(segments, cold(sorted(step)))
    clean = keeper(base / "clean").complete((), cold(sorted(steps[-1])))
    assert segments == clean
    covered = [d for s in segments for d in live.digests(s) or ()]
    assert sorted(covered) == sorted(name(i) for i in steps[-1])  # each digest exactly once


def test_one_new_cold_digest_rewrites_one_bucket(tmp_path: Path) -> None:
    k = keeper(tmp_path)
    numbers = list(range(3 * BUCKET_DIGESTS))
    first = k.complete((), cold(numbers))
    assert len(first) == bucket_count(len(numbers)) == 4
    second = k.complete(first, cold([*numbers[1:], 10_000]))
    assert len(set(first) - set(second)) <= 2  # the bucket that lost one, the one that gained
    assert len(set(second) - set(first)) <= 2


def test_until_a_bucket_is_rebuilt_the_old_segment_stays_listed(tmp_path: Path) -> None:
    k = keeper(tmp_path)
    numbers = list(range(2 * BUCKET_DIGESTS - 10))  # two buckets before and after
    first = k.complete((), cold(numbers))
    plan = k.plan(first, cold([*numbers, 5000]))
    assert len(plan.todo) == 1
    # every digest still cold stays covered by some listed segment meanwhile
    listed = {d for s in plan.segments for d in k.digests(s) or ()}
    assert set(name(i) for i in numbers) <= listed
    built = k.build(plan.todo[0])
    done = k.plan([*plan.segments, built], cold([*numbers, 5000]))
    assert not done.todo and not done.stale
    assert done.segments == k.complete((), cold([*numbers, 5000]))


def test_segments_answer_for_their_digests(tmp_path: Path) -> None:
    k = keeper(tmp_path)
    numbers = random.Random(3).sample(range(5000), 600)
    segments = k.complete((), cold(numbers))
    writer = StoreWriter(tmp_path)
    holders: set[str] = set()
    for s in segments:
        lex = LexiconSegment(writer.layout.record_path(s))
        holders |= {lex.digests[i] for i in lex.holders(b"common", IN_ACTIVE)}
        own = name(numbers[0])
        if own in lex.digests:
            assert lex.holders(own[:12].encode(), IN_ACTIVE) == [lex.digests.index(own)]
        lex.close()
    assert holders == {name(i) for i in numbers}


def test_buckets_built_in_worker_processes_are_the_same_files(tmp_path: Path) -> None:
    from pipeline.pool import WorkerPool

    numbers = list(range(3 * BUCKET_DIGESTS))
    writer = StoreWriter(tmp_path / "index")
    # the worker processes read the vocabularies back from the digest records
    states = [
        state(f"/s/{i}.jsonl", n, "e" * 64 + ".entries", tier="cold")
        for i, n in ((i, writer.put(_digest(i))[0]) for i in numbers)
    ]
    buckets = list(LexiconKeeper(writer).plan((), states).todo)
    assert len(buckets) == 4
    with WorkerPool(2, inline=False) as pool:
        spawned = pool.build_buckets(tmp_path / "index", buckets)
    with WorkerPool(2, inline=True) as pool:
        here = pool.build_buckets(tmp_path / "index", buckets)
    assert [name for name, _ in spawned] == [name for name, _ in here]
    assert all(n > 0 for _, n in spawned)  # the spawned ones wrote them first
    assert LexiconKeeper(writer).complete((), states) == tuple(name for name, _ in here)


def _digest(i: int) -> ColdDigest:
    from tests.unit.store.factories import cold_digest

    base = cold_digest(f"/s/{i}.jsonl")
    view = replace(base.views[0], vocabulary=b"\n".join(sorted([b"common", b"own%d" % i])))
    return replace(base, views=(view,))
