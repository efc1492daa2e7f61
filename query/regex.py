"""Explicit regex mode: untrusted patterns run in a disposable worker process, never here.

::

    query process ──(pattern, haystacks)──► worker: python -I -S (stdlib only)
                  ◄──(loaded | invalid_regex)──
                  ──(run)──► clock starts
                  ◄──(matched indices)──
        deadline passed? ──► SIGKILL the worker, answer regex_timeout, start a new one

The worker is kept warm between queries and killed outright at the timeout, so catastrophic
backtracking such as ``(a+)+$`` burns a core for at most ``regexTimeoutMs`` and can never
stall the query process. The timeout counts the worker's CPU time where Linux's ``/proc``
shows it (wall time elsewhere), with a wall-clock bound of 20x on top, so a worker waiting
for a core on a busy machine is not mistaken for one that backtracks. Only the search itself
is timed: the worker's interpreter
has said it is ready before any pattern is sent, and the pattern is compiled (a bad one
answers ``invalid_regex``) and the haystacks unpacked before the ``run`` that starts the
clock, so a loaded machine delays those steps (under their own generous bound) instead of
turning a valid ``b+`` into a timeout. A replacement worker is started as soon as one is
killed, so the next query finds it warm. It is an interpreter started with ``-I -S`` (no
site, no environment, no cwd on the path) running the stdlib source below, with its address
space capped; frames are length-prefixed ``marshal`` data between two copies of the same
interpreter.

The four limits and their structured errors are the seed's: ``regexMaxPatternBytes``
(``regex_pattern_too_large``, checked before any worker runs), ``regexMaxHaystackTerms`` and
``regexMaxHaystackBytes`` (enforced by the caller while collecting haystacks),
``regexTimeoutMs`` (``regex_timeout``); a pattern ``re`` rejects is ``invalid_regex``, a
worker that dies or answers nonsense is ``regex_worker_error``.

Semantics are Python's ``re`` with ``IGNORECASE`` on ``str`` (Unicode) patterns, where the
seed runs JavaScript with flags ``iu``. They agree on ordinary patterns; the differences:
``\\d``, ``\\w``, ``\\s`` and ``\\b`` are Unicode-aware here (ASCII in JavaScript); ``.`` stops
only at ``\\n`` (JavaScript also stops at ``\\r``, U+2028, U+2029); named groups are
spelled ``(?P<name>…)`` (JavaScript's ``(?<name>…)`` is ``invalid_regex`` here); ``\\p{…}``
property classes and the ``v``-flag set syntax do not exist; inline flags such as ``(?i)``,
atomic groups and possessive quantifiers are accepted although JavaScript rejects them.
"""

from __future__ import annotations

import marshal
import os
import selectors
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from store.reasons import INVALID_REGEX, REGEX_PATTERN_TOO_LARGE, REGEX_TIMEOUT, REGEX_WORKER_ERROR

__all__ = ["RegexLimits", "RegexOutcome", "RegexRunner"]

_HEADER: Final = struct.Struct("<I")
_MEMORY_CAP: Final = 1 << 30
# Bound on the untimed steps (interpreter start, compile and unpack): generous, since only a
# machine under heavy load or a broken worker gets near it.
_STEP_SECONDS: Final = 30.0
_RUN: Final = marshal.dumps(("run",))
# The regex clock counts the worker's CPU time (read every _CPU_POLL_SECONDS); waiting for a
# core is bounded apart, by a wall-clock deadline of _WALL_FACTOR x the timeout (at least
# _WALL_FLOOR_SECONDS), so a worker that never gets to run still ends in regex_timeout.
_CPU_POLL_SECONDS: Final = 0.01
_WALL_FACTOR: Final = 20
_WALL_FLOOR_SECONDS: Final = 5.0
_TICKS: Final = float(os.sysconf("SC_CLK_TCK")) if hasattr(os, "sysconf") else 100.0

# Runs in the worker: read a frame, compile, test every haystack, write a frame; repeat.
_WORKER_TEMPLATE = r"""
import marshal, re, struct, sys
try:
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))
except Exception:
    pass
rd, wr = sys.stdin.buffer, sys.stdout.buffer
head = struct.Struct("<I")
def read(n):
    data = b""
    while len(data) < n:
        chunk = rd.read(n - len(data))
        if not chunk:
            raise SystemExit(0)
        data += chunk
    return data
def write(answer):
    out = marshal.dumps(answer)
    wr.write(head.pack(len(out)) + out)
    wr.flush()
write(("ready", None))
rx, haystacks = None, []
while True:
    (size,) = head.unpack(read(head.size))
    job = marshal.loads(read(size))
    try:
        if job[0] == "load":
            rx, haystacks = None, job[2]
            rx = re.compile(job[1], re.IGNORECASE)
            answer = ("loaded", None)
        elif rx is None:
            answer = (WORKER_ERROR, "run before load")
        else:
            answer = ("ok", [i for i, h in enumerate(haystacks) if rx.search(h) is not None])
    except (re.error, OverflowError, ValueError, TypeError, RecursionError) as exc:
        answer = (INVALID, str(exc))
    except MemoryError:
        answer = (WORKER_ERROR, "the regex worker ran out of memory")
    write(answer)
"""
# The worker imports nothing of ours (-I -S): its constants are written into its source.
_WORKER: Final = (
    _WORKER_TEMPLATE.replace("MEMORY_CAP", str(_MEMORY_CAP))
    .replace("WORKER_ERROR", repr(REGEX_WORKER_ERROR))
    .replace("INVALID", repr(INVALID_REGEX))
)


@dataclass(frozen=True, slots=True)
class RegexLimits:
    max_pattern_bytes: int = 1024
    max_haystack_terms: int = 20_000
    max_haystack_bytes: int = 2 * 1024 * 1024
    timeout_ms: int = 250


@dataclass(frozen=True, slots=True)
class RegexOutcome:
    """Matched haystack indices, or the structured error (``matched`` is then empty)."""

    matched: tuple[int, ...] = ()
    error: dict[str, str] | None = None

    @property
    def complete(self) -> bool:
        return self.error is None


def _error(code: str, message: str) -> RegexOutcome:
    return RegexOutcome((), {"code": code, "message": message})


class _WorkerFailed(Exception):
    """The worker died, answered nonsense, or missed a step's own (untimed-search) bound."""


class _Worker:
    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _WORKER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            close_fds=True,
        )
        self.ready = False

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                stream.close()

    def wait_ready(self) -> None:
        """Block until the interpreter has started (once per worker, never on the clock)."""
        if not self.ready:
            if self.receive(time.monotonic() + _STEP_SECONDS) != ("ready", None):
                raise _WorkerFailed("the regex worker did not start")
            self.ready = True

    def send(self, job: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(_HEADER.pack(len(job)) + job)
        self.proc.stdin.flush()

    def cpu_seconds(self) -> float | None:
        """CPU time the worker has used (Linux ``/proc``), or None where it cannot be read."""
        try:
            with open(f"/proc/{self.proc.pid}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / _TICKS
        except (OSError, IndexError, ValueError):
            return None

    def receive(self, deadline: float, cpu_budget: float | None = None) -> tuple[str, Any] | None:
        """The next answer; None when *deadline* passed first (the caller kills us).

        With *cpu_budget*, the answer is also given up once the worker has spent that much CPU
        time from now: a search is stopped by what it burns, so a machine whose other work
        keeps the worker waiting for a core does not turn a quick pattern into a timeout.
        *deadline* is then the outer bound on waiting."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        data = bytearray()
        need = _HEADER.size
        size: int | None = None
        spent_before = self.cpu_seconds() if cpu_budget is not None else None
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                if spent_before is None:
                    if not sel.select(remaining):
                        return None
                elif not sel.select(min(remaining, _CPU_POLL_SECONDS)):
                    spent = self.cpu_seconds()
                    if spent is not None and spent - spent_before >= (cpu_budget or 0.0):
                        return None
                    continue  # unreadable for a moment: the outer deadline still holds
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    raise EOFError("regex worker exited")
                data += chunk
                if size is None and len(data) >= need:
                    (size,) = _HEADER.unpack(bytes(data[:need]))
                    need += size
                if size is not None and len(data) >= need:
                    answer = marshal.loads(bytes(data[_HEADER.size : need]))
                    if not (isinstance(answer, tuple) and len(answer) == 2):
                        raise ValueError("regex worker returned an invalid result")
                    return answer[0], answer[1]


class RegexRunner:
    """One warm worker at a time, replaced whenever it is killed or dies. Thread-safe."""

    def __init__(self, limits: RegexLimits) -> None:
        self.limits = limits
        self._worker: _Worker | None = None
        self._lock = threading.Lock()

    def warm(self) -> None:
        """Start the worker now, so the first query does not wait for an interpreter."""
        with self._lock:
            if self._worker is None or not self._worker.alive:
                try:
                    self._worker = _Worker()
                except OSError:
                    self._worker = None

    def run(self, pattern: str, haystacks: Sequence[str]) -> RegexOutcome:
        size = len(pattern.encode("utf-8", "surrogatepass"))
        if size > self.limits.max_pattern_bytes:
            return _error(
                REGEX_PATTERN_TOO_LARGE,
                f"Regex pattern is {size} bytes; limit is {self.limits.max_pattern_bytes}.",
            )
        load = marshal.dumps(("load", pattern, list(haystacks)))
        with self._lock:
            worker = self._worker
            if worker is None or not worker.alive:
                try:
                    worker = self._worker = _Worker()
                except OSError as exc:
                    return _error(REGEX_WORKER_ERROR, f"cannot start the regex worker: {exc}")
            try:
                worker.wait_ready()
                worker.send(load)
                loaded = worker.receive(time.monotonic() + _STEP_SECONDS)
                if loaded is None:
                    raise _WorkerFailed("the regex worker did not load the pattern in time")
                if loaded[0] == "loaded":
                    worker.send(_RUN)
                    # the clock: from the moment the search is asked for, in CPU time where
                    # the worker's can be read, with wall time as the outer bound
                    budget = self.limits.timeout_ms / 1000
                    if worker.cpu_seconds() is None:
                        answer = worker.receive(time.monotonic() + budget)
                    else:
                        wall = time.monotonic() + max(budget * _WALL_FACTOR, _WALL_FLOOR_SECONDS)
                        answer = worker.receive(wall, budget)
                else:
                    answer = loaded
            except (OSError, EOFError, ValueError, struct.error, _WorkerFailed) as exc:
                self._replace(worker)
                return _error(REGEX_WORKER_ERROR, f"the regex worker failed: {exc}")
            if answer is None:
                self._replace(worker)
                return _error(
                    REGEX_TIMEOUT, f"Regex execution exceeded {self.limits.timeout_ms} ms."
                )
        status, body = answer
        if status == "ok" and isinstance(body, list) and all(isinstance(i, int) for i in body):
            return RegexOutcome(tuple(body))
        if status in (INVALID_REGEX, REGEX_WORKER_ERROR) and isinstance(body, str):
            return _error(status, body)
        return _error(REGEX_WORKER_ERROR, "Regex worker returned an invalid result.")

    def _replace(self, worker: _Worker) -> None:
        """Kill *worker* and start its successor now, while no query waits for it."""
        worker.kill()
        try:
            self._worker = _Worker()
        except OSError:
            self._worker = None

    def close(self) -> None:
        with self._lock:
            if self._worker is not None:
                self._worker.kill()
                self._worker = None

    def __del__(self) -> None:  # a forgotten runner must not leave a process behind
        worker = getattr(self, "_worker", None)
        if worker is not None and worker.alive:
            worker.proc.kill()
