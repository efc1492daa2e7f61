"""The catch-up pool: a worker that dies costs its own message only, never the run."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

import pipeline.pool
from devtools.corpus import generate
from pipeline.exits import describe_exit
from pipeline.forked import Forked
from pipeline.lexicon import LexiconKeeper, build_bucket
from pipeline.pool import BackgroundBuilds, TaskFailed, WorkerDied, WorkerPool
from pipeline.session_job import Job
from stages.policy import Policy
from store.errors import DiskFull
from store.writer import StoreWriter
from tests.unit.pipeline import pool_helpers
from tests.unit.pipeline.pool_helpers import POISON

pytestmark = pytest.mark.integration  # spawns worker processes


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    out = tmp_path_factory.mktemp("corpus")
    generate(out, sessions=8, mean_kb=4, seed=5, agents=("pi",))
    files = sorted((out / "pi").rglob("*.jsonl"))
    # the poisoned session sits in the middle of a message of several
    poison = files[3].with_name(f"{POISON}-{files[3].name}")
    shutil.copy(files[3], poison)
    files[3] = poison
    return files


def _healthy(corpus: list[Path]) -> list[Path]:
    return [f for f in corpus if POISON not in f.name]


def _jobs(files: list[Path], index: Path) -> tuple[list[Job], dict[str, int]]:
    jobs = [Job(str(f), "pi", "cold", Policy(), str(index)) for f in files]
    return jobs, {str(f): f.stat().st_size for f in files}


def test_a_session_that_kills_its_worker_is_skipped_and_the_rest_indexed(
    corpus: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pipeline.pool, "UNITS_PER_WORKER", 1)  # messages of several sessions
    jobs, sizes = _jobs(corpus, tmp_path / "index")
    with WorkerPool(2, inline=False, index_unit=pool_helpers.index_or_die) as pool:
        results = list(pool.index(jobs, sizes))
    assert sorted(r.path for r in results) == sorted(sizes)  # each job answered exactly once
    by_path = {r.path: r for r in results}
    poison = next(p for p in sizes if POISON in p)
    assert by_path[poison].state is None
    assert by_path[poison].reason == "index_error"
    assert "killed by SIGKILL" in (by_path[poison].error or "")
    others = [r for r in results if r.path != poison]
    assert all(r.state is not None and r.reason is None for r in others)


@pytest.mark.parametrize("units_per_worker", [1, 32])  # messages of several / of one session
def test_a_worker_killed_from_outside_costs_no_session(
    corpus: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, units_per_worker: int
) -> None:
    monkeypatch.setattr(pipeline.pool, "UNITS_PER_WORKER", units_per_worker)
    jobs, sizes = _jobs(_healthy(corpus), tmp_path / "index")
    with WorkerPool(2, inline=False, index_unit=pool_helpers.index_killed_once) as pool:
        results = list(pool.index(jobs, sizes))
    assert (tmp_path / "killed-once").is_dir(), "the kill happened"
    assert sorted(r.path for r in results) == sorted(sizes)
    assert [r.path for r in results if r.state is None or r.reason is not None] == []


def test_a_message_that_raises_fails_its_sessions_with_the_traceback(
    corpus: list[Path], tmp_path: Path
) -> None:
    jobs, sizes = _jobs(_healthy(corpus), tmp_path / "index")
    with WorkerPool(2, inline=False, index_unit=pool_helpers.index_raises) as pool:
        results = list(pool.index(jobs, sizes))
    assert sorted(r.path for r in results) == sorted(sizes)
    assert all(r.state is None and r.reason == "index_error" for r in results)
    assert all("a bug outside the per-session guard" in (r.error or "") for r in results)


def test_the_same_sessions_index_the_same_in_workers_and_inline(
    corpus: list[Path], tmp_path: Path
) -> None:
    healthy = _healthy(corpus)
    jobs, sizes = _jobs(healthy, tmp_path / "spawned")
    with WorkerPool(2, inline=False) as pool:
        spawned = {r.path: r.state for r in pool.index(jobs, sizes)}
    jobs, sizes = _jobs(healthy, tmp_path / "inline")
    with WorkerPool(2, inline=True) as pool:
        inline = {r.path: r.state for r in pool.index(jobs, sizes)}
    assert spawned == inline
    assert all(s is not None for s in spawned.values())


def test_a_bucket_submitted_ahead_runs_before_the_messages_still_queued(
    corpus: list[Path], tmp_path: Path
) -> None:
    healthy = _healthy(corpus)
    jobs, _ = _jobs(healthy, tmp_path / "index")
    sizes = {j.path: 1000 for j in jobs}  # each session a message of its own (one worker)
    names = [Path(j.path).name for j in jobs]
    pool = WorkerPool(
        1,
        inline=False,
        index_unit=pool_helpers.index_logged,
        build_bucket=pool_helpers.bucket_logged,
    )
    with pool:
        results = pool.index(jobs, sizes)
        next(results)  # the first message answered, the second one sent already
        behind = pool.submit_bucket(tmp_path / "index", ("behind",))
        ahead = pool.submit_bucket(tmp_path / "index", ("ahead",), ahead=True)
        assert len(list(results)) == len(jobs) - 1
        assert behind is not None and ahead is not None
        assert (ahead.get(), behind.get()) == (("ahead", 0), ("behind", 0))
    order = (tmp_path / "order.log").read_text().splitlines()
    units = [f"unit {n}" for n in names]
    assert order == [*units[:2], "bucket ahead", *units[2:], "bucket behind"]


def _buckets(corpus: list[Path], index: Path) -> list[tuple[str, ...]]:
    healthy = _healthy(corpus)
    jobs, sizes = _jobs(healthy, index)
    with WorkerPool(1, inline=True) as pool:
        states = [r.state for r in pool.index(jobs, sizes) if r.state is not None]
    return list(LexiconKeeper(StoreWriter(index)).plan((), states).todo)


def test_a_bucket_whose_worker_died_is_built_again(corpus: list[Path], tmp_path: Path) -> None:
    index = tmp_path / "index"
    buckets = _buckets(corpus, index)
    with WorkerPool(2, inline=False, build_bucket=pool_helpers.bucket_dies_once) as pool:
        handle = pool.submit_bucket(index, buckets[0])
        assert handle is not None
        name, written = handle.get()
    assert (index / "died-once").exists()  # the first attempt died
    assert written > 0
    assert StoreWriter(index).layout.record_path(name).is_file()


@pytest.mark.parametrize(
    ("builder", "error", "says"),
    [
        # a bucket that keeps killing workers stops the run after its second attempt
        (pool_helpers.bucket_dies, WorkerDied, "killed by SIGKILL.*2 times"),
        # an error raised in a worker comes back with its traceback
        (pool_helpers.bucket_fails, TaskFailed, "ValueError: a bug in the builder"),
        # a full disk comes back as DiskFull, naming the folder and its free space
        (pool_helpers.bucket_raises, DiskFull, "no space left for the index in .*bytes free"),
    ],
)
def test_a_bucket_that_cannot_be_built_stops_the_run(
    corpus: list[Path], tmp_path: Path, builder: Any, error: type[Exception], says: str
) -> None:
    index = tmp_path / "index"
    buckets = _buckets(corpus, index)
    with (
        pytest.raises(error, match=says),
        WorkerPool(2, inline=False, build_bucket=builder) as pool,
    ):
        pool.build_buckets(index, [buckets[0], buckets[0]])


def test_workers_that_cannot_start_stop_the_run_instead_of_respawning_forever(
    corpus: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pipeline.pool, "_serve", pool_helpers.die_at_start)
    jobs, sizes = _jobs(_healthy(corpus), tmp_path / "index")
    with (
        pytest.raises(WorkerDied, match="die as they start"),
        WorkerPool(2, inline=False) as pool,
    ):
        list(pool.index(jobs, sizes))


@contextlib.contextmanager
def background(
    corpus: list[Path], tmp_path: Path, build: Any = None, now: list[float] | None = None
) -> Iterator[tuple[BackgroundBuilds, tuple[str, ...], Path]]:
    """Background builds over the first bucket of *corpus*, closed afterwards."""
    index = tmp_path / "index"
    bucket = _buckets(corpus, index)[0]
    clock = (lambda: now[0]) if now is not None else time.monotonic
    builds = BackgroundBuilds(index, build_bucket=build or build_bucket, clock=clock)
    try:
        yield builds, bucket, index
    finally:
        builds.close()


def test_a_background_build_reports_its_segment(corpus: list[Path], tmp_path: Path) -> None:
    with background(corpus, tmp_path) as (builds, bucket, index):
        builds.submit(bucket)
        assert builds.busy and builds.building == bucket
        # as the publisher's loop asks: never blocking, again and again
        deadline = time.monotonic() + 60
        while (name := builds.poll()) is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert name is not None and StoreWriter(index).layout.record_path(name).is_file()
        assert not builds.busy and builds.building is None
        assert builds.poll() is None  # nothing running


def test_a_background_build_whose_worker_keeps_dying_is_dropped_not_awaited_forever(
    corpus: list[Path], tmp_path: Path
) -> None:
    with background(corpus, tmp_path, pool_helpers.bucket_dies) as (builds, bucket, _):
        builds.submit(bucket)
        assert builds.poll(timeout=None) is None  # the publisher's flush waits like this
        assert not builds.busy


def test_a_dropped_background_build_is_offered_again_after_a_pause_that_doubles(
    corpus: list[Path], tmp_path: Path
) -> None:
    now = [0.0]
    with background(corpus, tmp_path, pool_helpers.bucket_raises, now) as (builds, bucket, _):
        builds.submit(bucket)
        assert builds.poll(timeout=None) is None and not builds.busy
        assert builds.due() is None
        now[0] = BackgroundBuilds.RETRY_FIRST_S - 0.1
        assert builds.due() is None
        now[0] = BackgroundBuilds.RETRY_FIRST_S
        assert builds.due() == bucket
        assert builds.due() is None  # handed out once
        builds.submit(bucket)
        assert builds.poll(timeout=None) is None  # fails again: the pause doubles
        now[0] += 2 * BackgroundBuilds.RETRY_FIRST_S - 0.1
        assert builds.due() is None
        now[0] += 0.1
        assert builds.due() == bucket


def test_a_retried_background_build_that_succeeds_is_not_offered_again(
    corpus: list[Path], tmp_path: Path
) -> None:
    now = [0.0]
    with background(corpus, tmp_path, pool_helpers.bucket_raises_once, now) as (
        builds,
        bucket,
        index,
    ):
        builds.submit(bucket)
        assert builds.poll(timeout=None) is None
        now[0] = BackgroundBuilds.RETRY_FIRST_S
        assert builds.due() == bucket
        builds.submit(bucket)
        name = builds.poll(timeout=None)
        assert name is not None and StoreWriter(index).layout.record_path(name).is_file()
        now[0] = 10 * BackgroundBuilds.RETRY_MAX_S
        assert builds.due() is None


def test_exits_are_described_for_people() -> None:
    assert describe_exit(-9) == "killed by SIGKILL (out of memory?)"
    assert describe_exit(-15) == "killed by SIGTERM"
    assert describe_exit(3) == "exited with status 3"


def test_a_single_session_is_indexed_in_a_worker_too(corpus: list[Path], tmp_path: Path) -> None:
    poison = next(f for f in corpus if POISON in f.name)
    jobs, sizes = _jobs([poison], tmp_path / "index")
    with WorkerPool(2, inline=False, index_unit=pool_helpers.index_or_die) as pool:
        (result,) = pool.index(jobs, sizes)  # the run survives the worker it killed
    assert result.reason == "index_error" and "killed by SIGKILL" in (result.error or "")


def test_a_worker_that_died_idle_is_replaced_before_it_gets_work(
    corpus: list[Path], tmp_path: Path
) -> None:

    healthy = _healthy(corpus)
    jobs, sizes = _jobs(healthy, tmp_path / "index")
    with WorkerPool(2, inline=False) as pool:
        assert all(r.state is not None for r in pool.index(jobs, sizes))
        idle = pool._running[0].process
        os.kill(idle.pid, signal.SIGKILL)
        idle.join()
        again = list(pool.index(jobs, sizes))
        assert idle not in [w.process for w in pool._running]
    assert sorted(r.path for r in again) == sorted(sizes)
    assert all(r.state is not None and r.reason is None for r in again)


def test_workers_are_forked_after_the_parent_warmed_once(
    corpus: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:

    monkeypatch.setattr(pool_helpers, "WARMED", [])
    jobs, sizes = _jobs(_healthy(corpus), tmp_path / "index")
    with WorkerPool(
        2, inline=False, index_unit=pool_helpers.index_if_warm, prepare=pool_helpers.warm
    ) as pool:
        assert all(r.state is not None and r.reason is None for r in pool.index(jobs, sizes))
        assert all(isinstance(w.process, Forked) for w in pool._running)
        os.kill(pool._running[0].process.pid, signal.SIGKILL)  # its replacement: warm too
        again = list(pool.index(jobs, sizes))
    assert all(r.state is not None and r.reason is None for r in again)
    assert pool_helpers.WARMED == ["warm"]  # once, in this process: a fork copies it


def test_a_process_running_threads_spawns_its_workers(corpus: list[Path], tmp_path: Path) -> None:

    jobs, sizes = _jobs(_healthy(corpus), tmp_path / "index")
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait, name="heartbeat")  # as the publisher's
    thread.start()
    try:
        with WorkerPool(2, inline=False) as pool:
            results = list(pool.index(jobs, sizes))
            assert not any(isinstance(w.process, Forked) for w in pool._running)
    finally:
        stop.set()
        thread.join()
    assert sorted(r.path for r in results) == sorted(sizes)
    assert all(r.state is not None and r.reason is None for r in results)


_ORPHANS = """
import os, signal, sys
from pipeline.pool import WorkerPool
from pipeline.session_job import Job
from stages.policy import Policy
from store.writer import StoreWriter

index, *paths = sys.argv[1:]
pool = WorkerPool(2, inline=False)
with StoreWriter(index).lock():
    jobs = [Job(p, "pi", "cold", Policy(), index) for p in paths]
    assert all(r.state is not None for r in pool.index(jobs, {p: 1 for p in paths}))
    print(" ".join(str(w.process.pid) for w in pool._running), flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
"""


def test_workers_end_with_their_parent_and_release_its_lock(
    corpus: list[Path], tmp_path: Path
) -> None:

    index = tmp_path / "index"
    root = Path(__file__).resolve().parents[3]
    run = subprocess.run(
        [sys.executable, "-c", _ORPHANS, str(index), *map(str, _healthy(corpus))],
        capture_output=True,
        text=True,
        cwd=root,
        timeout=120,
        check=False,
    )
    assert run.returncode == -9, run.stderr
    pids = [int(p) for p in run.stdout.split()]
    assert len(pids) == 2
    deadline = time.monotonic() + 30
    left = pids
    while left and time.monotonic() < deadline:
        left = [p for p in left if psutil.pid_exists(p) and _running(p)]
        time.sleep(0.05)
    for pid in left:  # orphans are no child of this process: the leak check would miss them
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    assert left == [], "workers outlived their parent"
    with StoreWriter(index).lock():  # no worker kept a copy of the writer lock
        pass


def _running(pid: int) -> bool:

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False
