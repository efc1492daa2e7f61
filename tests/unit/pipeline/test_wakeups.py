"""Idle children wake when work arrives, not on their timer; the stop flag still wins."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import multiprocess

from pipeline.catchup import catch_up
from pipeline.children import Flag, _pause, _Semaphore
from pipeline.settings import RunSettings
from pipeline.watcher import Watcher
from store.journal import FileJournal
from store.layout import IndexLayout
from tests.helpers import PiRoot, header, user

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
