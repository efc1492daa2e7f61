"""How many jobs the catch-up run sends a worker process per pool message."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pipeline.indexer import _chunksize


def test_big_runs_batch_and_small_runs_do_not() -> None:
    assert _chunksize(832, 2) == 8
    assert _chunksize(100, 2) == 3
    assert _chunksize(40, 2) == 1
    assert _chunksize(2, 8) == 1


@given(st.integers(1, 100_000), st.integers(1, 64))
def test_every_worker_still_gets_many_messages(jobs: int, workers: int) -> None:
    size = _chunksize(jobs, workers)
    assert 1 <= size <= 8
    if size > 1:
        assert jobs // size >= workers * 16
