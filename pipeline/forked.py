"""A worker process forked from this warm one, keeping nothing of its parent's but its pipe.

A spawned worker is a new interpreter importing every module again (a quarter of a second
of CPU or more each, about 5 % of a build from empty: issue 14); a forked one starts with
what its parent imported and warmed (``pipeline.preload``). What a fork copies that a worker
must not keep, and what the child does about it first thing:

- file descriptors: the writer lock and the journal's appender lock (an flock belongs to the
  open file description, so a worker holding a copy would keep the index locked after its
  parent let go or died), the other workers' pipes and its own parent end (a worker would
  never see its parent's end close), journal segments, sqlite files. The child closes every
  descriptor but stdin/stdout/stderr (and those under ``sys.stdout``/``sys.stderr``), its
  end of the pipe and its sentinel.
- the garbage collector's view of the parent's objects: collected in the child, one owning a
  descriptor would close a number the child may have opened again by then. The parent stops
  the collector across the fork and the child freezes (``gc.freeze``) everything it inherited
  before collecting anything, so none of it is ever collected or finalized there.
- signal handling: SIGTERM back to its default (``terminate`` ends a worker), SIGINT ignored
  (a terminal's Ctrl-C reaches the whole group; the parent decides), the parent's wakeup
  descriptor let go.
- locks other threads hold: a fork copies them held, for good. A process with threads does
  not fork a worker (``forkable``; the pool spawns one then).
- buffered output: flushed before the fork, or the child would write it a second time.
- exit handlers: the child ends with ``os._exit``, so none of the parent's run there.
"""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import sys
import threading
import traceback
from collections.abc import Callable
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

__all__ = ["Forked", "forkable"]

_STD_STREAMS: Final = (0, 1, 2)
_UNKNOWN: Final = 255  # the exit status of a child reaped elsewhere


def forkable() -> bool:
    """Whether this process may fork a worker: it can, and no other thread runs."""
    return hasattr(os, "fork") and threading.active_count() == 1


class Forked:
    """A child process running ``target(conn)``; ``conn`` is the parent's end of its pipe.

    The same surface the pool uses of a ``multiprocess.Process``: ``pid``, ``sentinel`` (a
    descriptor readable once the child has exited), ``exitcode`` (negative: the signal that
    ended it), ``is_alive``, ``join``, ``terminate``, ``kill``, ``close``.
    """

    def __init__(self, target: Callable[[Connection], None]) -> None:
        # deferred: the publisher imports the pool, and starts a worker only for a big lexicon
        from multiprocessing.connection import Pipe

        conn, child_conn = Pipe()
        sentinel, child_sentinel = os.pipe()
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        collecting = gc.isenabled()
        gc.disable()  # nothing collected between the fork and the child's freeze
        try:
            pid = os.fork()
        except BaseException:
            if collecting:
                gc.enable()
            for end in (conn, child_conn):
                end.close()
            os.close(sentinel)
            os.close(child_sentinel)
            raise
        if pid == 0:
            _child(target, child_conn, child_sentinel, collecting)  # never returns
        if collecting:
            gc.enable()
        child_conn.close()
        os.close(child_sentinel)  # the child's copy is the last: EOF when it exits
        self.pid = pid
        self.conn = conn
        self.sentinel = sentinel
        self.exitcode: int | None = None

    def is_alive(self) -> bool:
        self._reap(block=False)
        return self.exitcode is None

    def join(self, timeout: float | None = None) -> None:
        from multiprocessing.connection import wait

        if self.exitcode is None and (timeout is None or wait([self.sentinel], timeout)):
            self._reap(block=True)  # its sentinel closed: it has exited, or is about to

    def terminate(self) -> None:
        self._signal(signal.SIGTERM)

    def kill(self) -> None:
        self._signal(signal.SIGKILL)

    def close(self) -> None:
        """Let go of the sentinel and the pipe (once it has exited)."""
        self.conn.close()
        if self.sentinel >= 0:
            os.close(self.sentinel)
            self.sentinel = -1

    def _signal(self, signum: int) -> None:
        if self.exitcode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signum)

    def _reap(self, *, block: bool) -> None:
        if self.exitcode is not None:
            return
        try:
            pid, status = os.waitpid(self.pid, 0 if block else os.WNOHANG)
        except ChildProcessError:
            from multiprocessing.connection import wait

            # Reaped by someone else (SIGCHLD ignored): it has exited once its sentinel
            # says so, with a status no one can know any more.
            if wait([self.sentinel], 0):
                self.exitcode = _UNKNOWN
            return
        if pid:
            self.exitcode = os.waitstatus_to_exitcode(status)


def _child(
    target: Callable[[Connection], None], conn: Connection, sentinel: int, collecting: bool
) -> None:
    code = 1
    try:
        gc.freeze()  # the parent's objects: never collected (nor finalized) here
        if collecting:
            gc.enable()
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        _close_all_but({*_STD_STREAMS, *_stream_fds(), conn.fileno(), sentinel})
        target(conn)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:  # noqa: BLE001 - said on stderr, then the exit status tells the parent
        with contextlib.suppress(Exception):
            traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)


def _stream_fds() -> set[int]:
    """The descriptors under ``sys.stdout`` and ``sys.stderr`` (logs go there), when they
    are others than 1 and 2 (output captured or redirected in-process)."""
    fds = set()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            fds.add(stream.fileno())
    return fds


def _close_all_but(keep: set[int]) -> None:
    """Close every descriptor of this process not in *keep*."""
    low = 0
    for fd in sorted(keep):
        if fd > low:
            os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, _highest_fd() + 1)


def _highest_fd() -> int:
    """The highest descriptor open: where there is no close_range(2), closing up to the limit
    is one system call per number (a million with a high ``ulimit -n``)."""
    for folder in ("/proc/self/fd", "/dev/fd"):
        with contextlib.suppress(OSError, ValueError):
            return max(int(name) for name in os.listdir(folder))
    return int(os.sysconf("SC_OPEN_MAX")) - 1
