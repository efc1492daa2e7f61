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
    assert all(len(u) == cap // 100 for u in units[2:-1])
    assert len(units) < 100


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
