"""A worker that just started warms its newest hot sessions (issue 22, item 11).

A fresh worker holds no session's hot state, so the first append to a session after a start
was built whole (every stage over the whole file, seconds for a big one), and the first
append after ``pipeline run`` started waited on it. ``IndexWorker.plan_warm`` picks the
newest hot sessions within a byte budget; the worker builds them whole while idle, so their
first append takes the append path. Each test restarts an inline pipeline over an index an
earlier one built and compares the end with a clean build.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from pipeline.runner import InlineRunner
from store.config import Config
from store.reader import open_snapshot
from tests.doubles import FakeClock
from tests.helpers import PiRoot
from tests.unit.pipeline.test_append_pipeline import (
    SETTINGS,
    append_lines,
    assert_converged,
    lines_for,
    pi_session,
    settle,
)


@pytest.fixture
def pi(tmp_path: Path) -> PiRoot:
    return PiRoot(tmp_path)


def _build(config: Config) -> None:
    with InlineRunner(config, SETTINGS) as runner:
        runner.run_until_idle()


def test_the_first_append_after_a_warm_start_takes_the_append_path(
    pi: PiRoot, tmp_path: Path
) -> None:
    config = pi.write_config()
    a = pi.session("a", pi_session("sa", 6), mtime_s=2000)
    pi.session("b", pi_session("sb", 4), mtime_s=1000)
    _build(config)
    generation = open_snapshot(config.index_dir).manifest.generation
    clock = FakeClock()
    with InlineRunner(config, SETTINGS, clock=clock) as runner:
        runner.worker.plan_warm()
        assert runner.worker.warming()
        runner.run_until_idle()
        counters = runner.worker.engine.counters
        assert not runner.worker.warming()
        assert (counters.warmed, counters.whole) == (2, 0)
        # the same bytes as published: warming stores nothing new and publishes nothing
        assert open_snapshot(config.index_dir).manifest.generation == generation
        append_lines(a, lines_for("sa", 2, start=6, parent="sa-5"))
        runner.notice(str(a))
        runner.run_until_idle()
        assert (counters.appends, counters.whole) == (1, 0)
        settle(runner, clock)
    assert_converged(config, tmp_path)


def test_without_warming_the_first_append_after_a_start_is_a_whole_build(pi: PiRoot) -> None:
    """The cost the plan removes: what a worker that did not warm does."""
    config = pi.write_config()
    a = pi.session("a", pi_session("sa", 6))
    _build(config)
    with InlineRunner(config, SETTINGS) as runner:
        runner.run_until_idle()
        append_lines(a, lines_for("sa", 2, start=6, parent="sa-5"))
        runner.notice(str(a))
        runner.run_until_idle()
        counters = runner.worker.engine.counters
        assert (counters.appends, counters.whole, counters.warmed) == (0, 1, 0)


def test_the_plan_is_newest_first_within_the_budget_and_the_hot_set(pi: PiRoot) -> None:
    config = pi.write_config(hotSessions=3)
    newest = pi.session("newest", pi_session("s1", 4), mtime_s=5000)
    big = pi.session("big", pi_session("s2", 400), mtime_s=4000)
    small = pi.session("small", pi_session("s3", 4), mtime_s=3000)
    cold = pi.session("cold", pi_session("s4", 4), mtime_s=1000)
    _build(config)
    budget = newest.stat().st_size + small.stat().st_size
    assert big.stat().st_size > budget
    with InlineRunner(config, replace(SETTINGS, warm_bytes=budget)) as runner:
        runner.worker.plan_warm()
        paths = [str(p) for p in (newest, big, small, cold)]
        order: list[str] = []
        while runner.worker.warming():
            before = {p for p in paths if runner.worker.engine.is_hot(p)}
            runner.worker.loop_once(0.0)
            order += sorted(p for p in paths if runner.worker.engine.is_hot(p) and p not in before)
    # the big one does not fit (the next smaller one still does); the cold one is not hot
    assert order == [str(newest), str(small)]


def test_warming_folds_deltas_a_previous_run_left_and_publishes_the_clean_build(
    pi: PiRoot, tmp_path: Path
) -> None:
    config = pi.write_config()
    a = pi.session("a", pi_session("sa", 6))
    _build(config)
    with InlineRunner(config, SETTINGS) as runner:
        runner.run_until_idle()
        append_lines(a, lines_for("sa", 2, start=6, parent="sa-5"))
        runner.notice(str(a))
        runner.run_until_idle()  # a whole build (cold start, no warming) ...
        append_lines(a, lines_for("sa", 2, start=8, parent="sa-7"))
        runner.notice(str(a))
        runner.run_until_idle()  # ... then an append: a delta, left unmerged at the stop
    assert open_snapshot(config.index_dir).session(str(a)).index_deltas  # type: ignore[union-attr]
    with InlineRunner(config, SETTINGS) as runner:
        runner.worker.plan_warm()
        runner.run_until_idle()
        assert runner.worker.engine.counters.warmed == 1
    assert not open_snapshot(config.index_dir).session(str(a)).index_deltas  # type: ignore[union-attr]
    assert_converged(config, tmp_path)


@pytest.mark.parametrize(("share", "rest"), [(0.5, 0.25), (0.25, 0.75), (1.0, 0.0)])
def test_warming_rests_in_proportion_to_its_builds(pi: PiRoot, share: float, rest: float) -> None:
    """Warming takes at most ``warm_share`` of a CPU: after a build of 0.25 s the (one)
    worker waits 0.25 s at one half, 0.75 s at one quarter, not at all at 1. A start's
    other processes (the query server loading, the first queries) get the rest (issue 22
    item 11); an append is handled at once meanwhile."""
    config = pi.write_config()
    sessions = {
        f"s{k}": pi.session(f"s{k}", pi_session(f"s{k}", 4), mtime_s=1000 + k) for k in range(8)
    }
    _build(config)
    clock = FakeClock()
    settings = replace(SETTINGS, warm_share=share)
    with InlineRunner(config, settings, clock=clock) as runner:
        worker = runner.worker
        build = worker.engine.warm

        def slow_build(*args: object, **kwargs: object) -> object:
            clock.advance(0.25)
            return build(*args, **kwargs)  # type: ignore[arg-type]

        worker.engine.warm = slow_build  # type: ignore[method-assign]
        worker.plan_warm()
        counters = worker.engine.counters
        assert worker.loop_once(clock()) and counters.warmed == 1
        if rest:
            assert not worker.loop_once(clock())  # resting, and nothing else to do
            name = "s7"  # the newest: warm now
            append_lines(sessions[name], lines_for(name, 1, start=4, parent=f"{name}-3"))
            runner.notice(str(sessions[name]))
            runner.watcher.loop_once(clock())
            assert worker.loop_once(clock()) and counters.appends == 1  # not held by the pace
            clock.advance(rest - 0.0625)
            assert not worker.loop_once(clock()) and counters.warmed == 1
            clock.advance(0.0625)
        assert worker.loop_once(clock()) and counters.warmed == 2


@pytest.mark.parametrize(
    ("share", "workers", "rest"), [(0.5, 1, 1.0), (0.5, 2, 3.0), (0.5, 4, 7.0), (1.0, 2, 1.0)]
)
def test_all_workers_together_warm_within_the_share(
    share: float, workers: int, rest: float
) -> None:
    """Each of *workers* takes its part of the share: two at one half rest three times
    their build, so that the two together never take more than half a CPU."""
    settings = replace(SETTINGS, warm_share=share, workers=workers)
    assert settings.warm_rest(0.5) == pytest.approx(rest * 0.5)


@pytest.mark.parametrize("share", [0.0, -0.5, 1.5])
def test_a_warm_share_outside_zero_to_one_is_refused(share: float) -> None:
    with pytest.raises(ValueError, match="warm_share"):
        replace(SETTINGS, warm_share=share)
