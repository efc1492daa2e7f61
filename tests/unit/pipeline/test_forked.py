"""A worker forked from a warm parent keeps nothing of the parent's that could hurt: no lock,
no other pipe, no parent object collected behind its back, no parent signal handler."""

from __future__ import annotations

import gc
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from multiprocessing.connection import Connection
from pathlib import Path

import pytest

from pipeline.exits import describe_exit
from pipeline.forked import Forked, forkable
from store.errors import StoreLocked
from store.writer import StoreWriter

pytestmark = [
    pytest.mark.integration,  # forks processes
    pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform"),
]


@pytest.fixture
def started() -> Iterator[Callable[[Callable[[Connection], None]], Forked]]:
    """Fork children; each is killed and reaped after the test, whatever happened."""
    children: list[Forked] = []

    def start(target: Callable[[Connection], None]) -> Forked:
        assert forkable(), "the test process runs threads: it would spawn"
        child = Forked(target)
        children.append(child)
        return child

    yield start
    for child in children:
        child.kill()
        child.join()
        child.close()


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def _wait_for_orders(conn: Connection) -> None:
    conn.send("up")
    conn.recv()


def test_a_child_keeps_no_descriptor_of_its_parent_but_its_pipe(
    tmp_path: Path, started: Callable[[Callable[[Connection], None]], Forked]
) -> None:
    held = os.open(tmp_path / "some-file", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    reader, writer = os.pipe()
    try:
        parents = [held, reader, writer]

        def report(conn: Connection) -> None:
            conn.send([fd for fd in parents if _is_open(fd)])
            conn.send([_is_open(fd) for fd in (0, 1, 2)])

        child = started(report)
        assert child.conn.recv() == []
        assert child.conn.recv() == [True, True, True]
        child.join(10)
        assert child.exitcode == 0
    finally:
        for fd in (held, reader, writer):
            os.close(fd)


def test_the_writer_lock_is_free_once_the_parent_lets_go_while_its_workers_live(
    tmp_path: Path, started: Callable[[Callable[[Connection], None]], Forked]
) -> None:
    index = tmp_path / "index"
    with StoreWriter(index).lock():
        child = started(_wait_for_orders)
        assert child.conn.recv() == "up"
        with pytest.raises(StoreLocked), StoreWriter(index).lock():  # held, by this process
            pass
    # an flock belongs to the open file description: a copy in the child would keep it
    with StoreWriter(index).lock():
        assert child.is_alive()
    child.conn.send("stop")
    child.join(10)
    assert child.exitcode == 0


def test_a_child_sees_its_pipe_close_when_its_parent_is_gone(
    started: Callable[[Callable[[Connection], None]], Forked],
) -> None:
    # Every worker of a pool is forked holding the others' pipes unless it closes them: the
    # first one would then never see its parent's end close.
    def until_eof(conn: Connection) -> None:
        conn.send("up")
        try:
            conn.recv()
        except EOFError:
            sys.exit(7)

    first = started(until_eof)
    second = started(until_eof)
    assert first.conn.recv() == second.conn.recv() == "up"
    first.conn.close()  # as the parent's death would
    first.join(10)
    assert first.exitcode == 7
    assert second.is_alive()


def test_a_child_killed_says_how(started: Callable[[Callable[[Connection], None]], Forked]) -> None:
    child = started(_wait_for_orders)
    assert child.conn.recv() == "up"
    os.kill(child.pid, signal.SIGKILL)
    child.join(10)
    assert child.exitcode == -signal.SIGKILL
    assert describe_exit(child.exitcode) == "killed by SIGKILL (out of memory?)"
    assert not child.is_alive()


def test_terminate_ends_a_child_whatever_its_parent_does_with_sigterm(
    started: Callable[[Callable[[Connection], None]], Forked],
) -> None:
    old = signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        child = started(_wait_for_orders)
    finally:
        signal.signal(signal.SIGTERM, old)
    assert child.conn.recv() == "up"
    child.terminate()
    child.join(10)
    assert child.exitcode == -signal.SIGTERM


def test_a_child_that_raises_exits_1_and_says_why_on_stderr(
    capfd: pytest.CaptureFixture[str], started: Callable[[Callable[[Connection], None]], Forked]
) -> None:
    def fail(conn: Connection) -> None:
        raise ValueError("a bug in the target")

    child = started(fail)
    child.join(10)
    assert child.exitcode == 1
    assert "ValueError: a bug in the target" in capfd.readouterr().err


def test_a_child_never_finalizes_what_its_parent_left_for_the_collector(
    tmp_path: Path, started: Callable[[Callable[[Connection], None]], Forked]
) -> None:
    # Garbage in a cycle when the fork happens: collected in the child, its finalizer would
    # run there (and a file object's would close a descriptor the child may own by then).
    marker = tmp_path / "finalized"

    class Cycle:
        def __init__(self) -> None:
            self.me = self

        def __del__(self) -> None:
            marker.touch()

    gc.disable()
    try:
        Cycle()

        def collect(conn: Connection) -> None:
            gc.collect()
            conn.send(marker.exists())

        child = started(collect)
        assert child.conn.recv() is False
        child.join(10)
    finally:
        gc.enable()
    gc.collect()  # here it is this process's garbage: finalized
    assert marker.exists()


def test_a_process_running_threads_does_not_fork() -> None:
    assert forkable()
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait, name="busy")
    thread.start()
    try:
        assert not forkable()
    finally:
        stop.set()
        thread.join()
    assert forkable()
