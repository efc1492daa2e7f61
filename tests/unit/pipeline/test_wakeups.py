"""Idle children wake when work arrives, not on their timer; the stop flag still wins."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import multiprocess
import pytest

from pipeline.catchup import catch_up
from pipeline.children import Flag, _pause, _Semaphore
from pipeline.runner import InlineRunner, Mailbox
from pipeline.settings import RunSettings
from pipeline.watcher import Watcher
from pipeline.workers import WorkerBatch
from store.journal import FileJournal
from store.layout import IndexLayout
from tests.helpers import PiRoot, header, jsonl, user

T0 = 1_700_000_000_000
# A pause timer no run reaches: a pause that ends did so for its wake or its stop flag.
TIMER = 600.0


def _flag() -> Flag:
    return Flag(multiprocess.get_context("spawn").Value("b", 0, lock=False))


def test_a_pause_ends_when_work_arrives() -> None:
    wake = threading.Event()
    threading.Timer(0.05, wake.set).start()
    started = time.monotonic()
    _pause(_flag(), wake, TIMER)
    # far below the timer, however loaded the machine: the wake ended the pause
    assert time.monotonic() - started < TIMER / 2


def test_a_pause_ends_on_stop_and_on_its_timer() -> None:
    stop = _flag()
    stop.set()
    started = time.monotonic()
    _pause(stop, threading.Event(), TIMER)
    _pause(_flag(), threading.Event(), 0.01)
    _pause(stop, None, TIMER)
    assert time.monotonic() - started < TIMER / 2


def test_one_wait_takes_every_release_so_far() -> None:
    semaphore = multiprocess.get_context("spawn").Semaphore(0)
    wake = _Semaphore(semaphore)
    for _ in range(3):
        semaphore.release()
    assert wake.wait(1.0) is True
    assert wake.wait(0.01) is False


def test_a_marked_path_wakes_the_watcher_until_it_journals(tmp_path: Path) -> None:
    pi = PiRoot(tmp_path)
    config = pi.write_config()
    path = pi.session("s", [header("s", "/work"), user("u", None, "hello", T0)], mtime_s=1000)
    catch_up(config)
    journal = FileJournal(IndexLayout(config.index_dir).journal, writable=True)
    watcher = Watcher(
        config, journal, policy="p", published=lambda: -1, settings=RunSettings(workers=1)
    )
    watcher.boot()
    watcher.loop_once(time.monotonic())
    assert not watcher.changed.is_set()
    watcher.mark(str(path))
    assert watcher.changed.is_set()
    watcher.loop_once(time.monotonic())
    assert not watcher.changed.is_set()
    journal.close()


class _Box(Mailbox):
    """A mailbox whose batch turns up *late* seconds into a wait (a fake clock moves)."""

    def __init__(self, clock: list[float], late: float) -> None:
        super().__init__()
        self.clock, self.late = clock, late
        self.waits: list[float] = []

    def get(self, timeout: float) -> WorkerBatch | None:
        self.waits.append(timeout)
        batch = super().get(timeout)
        if batch is not None and timeout > 0:
            self.clock[0] += min(self.late, timeout)
        return batch


def _append(runner: InlineRunner, path: Path, entry_id: str, parent: str) -> None:
    with path.open("ab") as f:
        f.write(jsonl([user(entry_id, parent, f"more {entry_id}", T0 + 1000)]))
    runner.notice(str(path))
    now = runner.clock()
    runner.watcher.loop_once(now)
    runner.worker.loop_once(now)  # its batch is in the mailbox now


def test_the_publisher_waits_for_a_batch_only_while_no_publish_is_due(tmp_path: Path) -> None:
    pi = PiRoot(tmp_path)
    config = pi.write_config()
    path = pi.session("s", [header("s", "/work"), user("u", None, "hello", T0)], mtime_s=1000)
    catch_up(config)
    clock = [1000.0]
    box = _Box(clock, late=0.03)
    settings = RunSettings(workers=1, publish_min_s=0.02, publish_bytes_per_s=1e15)
    with InlineRunner(config, settings, mailbox=box, clock=lambda: clock[0]) as r:
        _append(r, path, "a1", "u")
        assert r.publisher.loop_once(clock[0], wait=0.05)  # the first publish of the run
        first = r.writer.current_generation()
        # a batch that ends a wait 30 ms on is published on that pass: its time has come,
        # though the pass started before the publish interval (20 ms) had passed
        clock[0] += 0.001
        _append(r, path, "a2", "a1")
        box.waits.clear()
        assert r.publisher.loop_once(clock[0], wait=0.05)
        assert r.writer.current_generation() == first + 1
        # a batch early in the interval: the next wait lasts only until the publish is due
        _append(r, path, "a3", "a2")
        box.late = 0.0
        r.publisher.loop_once(clock[0], wait=0.05)
        assert r.writer.current_generation() == first + 1
        clock[0] += 0.005
        box.waits.clear()
        r.publisher.loop_once(clock[0], wait=0.05)
        assert box.waits[0] == pytest.approx(0.015)
        clock[0] += 0.016
        assert r.publisher.loop_once(clock[0], wait=0.05)
        assert r.writer.current_generation() == first + 2
