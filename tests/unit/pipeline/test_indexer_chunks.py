"""How the catch-up run groups jobs into pool messages."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pipeline.pool import UNITS_PER_WORKER, _units
from pipeline.session_job import Job
from stages.policy import Policy


def jobs_of(sizes: list[int]) -> tuple[list[Job], dict[str, int]]:
    jobs = [Job(f"/s/{i}.jsonl", "pi", "cold", Policy(), "/idx") for i in range(len(sizes))]
    return jobs, {j.path: size for j, size in zip(jobs, sizes, strict=True)}


def test_big_sessions_go_alone_and_small_ones_together() -> None:
    sizes = [50_000, 40_000] + [100] * 800
    jobs, by_path = jobs_of(sizes)
    units = _units(jobs, by_path, 2)
    cap = sum(sizes) // (2 * UNITS_PER_WORKER)
    assert [len(u) for u in units[:2]] == [1, 1]
    lengths = [len(u) for u in units[2:]]
    # full runs, then (the last few caps' worth) smaller and smaller ones, down to 1/8 of one
    full = cap // 100
    shrinks = next(i for i, n in enumerate(lengths) if n < full)
    assert shrinks > len(lengths) // 2
    assert lengths[:shrinks] == [full] * shrinks
    assert lengths[shrinks:-1] == sorted(lengths[shrinks:-1], reverse=True)
    assert min(lengths[shrinks:-1]) == cap // 8 // 100
    assert len(units) < 100


def test_the_last_runs_are_small_so_workers_finish_together() -> None:
    sizes = [100] * 2000
    jobs, by_path = jobs_of(sizes)
    units = _units(jobs, by_path, 2)
    cap = sum(sizes) // (2 * UNITS_PER_WORKER)
    bytes_of = [sum(by_path[j.path] for j in u) for u in units]
    assert bytes_of[0] == cap // 100 * 100
    # what is left when each run starts: never more than half a worker's share of it in one
    left = sum(sizes)
    for size in bytes_of:
        assert size <= max(cap // 8, left // 4)
        left -= size
    assert bytes_of[-1] <= cap // 8


@given(
    st.lists(st.integers(0, 10**7), min_size=1, max_size=300).map(lambda s: sorted(s)[::-1]),
    st.integers(1, 16),
)
def test_units_keep_every_job_in_order_within_the_byte_cap(sizes: list[int], workers: int) -> None:
    jobs, by_path = jobs_of(sizes)
    units = _units(jobs, by_path, workers)
    assert [j for u in units for j in u] == jobs
    cap = max(1, sum(sizes) // (workers * UNITS_PER_WORKER))
    for unit in units:
        assert unit
        if len(unit) > 1:
            assert sum(by_path[j.path] for j in unit) <= cap
