"""Test doubles shipped with the code: they keep the invariants of what they replace.

* ``MemoryJournal`` — the journal in a list: dense positions from ``start_at``, trimmed
  positions refuse to be read again (CorruptRecord), as ``store.journal.FileJournal`` does.
* ``FakeClock`` — a monotonic clock that moves only when told to.
* ``LivePipeline`` — `pipeline run` in a subprocess, with its JSON log and run state, for
  integration tests; ``wait_for`` polls a condition with a generous deadline (no sleeps that
  guess how long something takes).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

import orjson

from store.codec import encode
from store.errors import CorruptRecord
from store.journal import JournalStats
from store.records import SourceEvent

__all__ = ["FakeClock", "LivePipeline", "MemoryJournal", "pid_gone", "wait_for"]

T = TypeVar("T")


class MemoryJournal:
    """The ``store.journal.Journal`` protocol in memory."""

    def __init__(self, start_at: int = 0) -> None:
        self.bytes_written = 0
        self._first = start_at
        self._events: list[SourceEvent] = []

    def append(self, events: Sequence[SourceEvent]) -> list[SourceEvent]:
        start = self._first + len(self._events)
        placed = [replace(e, position=start + i) for i, e in enumerate(events)]
        self._events.extend(placed)
        self.bytes_written += sum(len(encode(e)) for e in placed)
        return placed

    def read(self, after: int, limit: int = 1000) -> list[SourceEvent]:
        if after + 1 < self._first and self._events:
            raise CorruptRecord("<memory journal>", f"position {after + 1} was trimmed")
        skip = max(0, after + 1 - self._first)
        return self._events[skip : skip + limit]

    def head(self) -> int:
        return self._first + len(self._events) - 1

    def trim(self, through: int) -> int:
        # Like FileJournal, keep the newest event so the head survives.
        drop = min(max(0, through + 1 - self._first), max(0, len(self._events) - 1))
        del self._events[:drop]
        self._first += drop
        return drop

    def statistics(self) -> JournalStats:
        return JournalStats(
            first=self._first,
            head=self.head(),
            segments=1 if self._events else 0,
            bytes=self.bytes_written,
        )

    def close(self) -> None:
        pass


class FakeClock:
    """``clock()`` returns the current fake time in seconds; ``advance`` moves it."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("a monotonic clock never goes back")
        self.now += seconds


def wait_for(
    condition: Callable[[], T | None],
    *,
    timeout: float = 10.0,
    interval: float = 0.02,
    what: str = "",
) -> T:
    """Poll *condition* until it returns something truthy; that value is returned.

    Raises AssertionError naming *what* after *timeout* seconds.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what or condition}")
        time.sleep(interval)


def pid_gone(pid: int) -> bool:
    """True when *pid* no longer runs (a zombie nobody reaped yet counts as gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return True
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False
    return fields[0] in ("Z", "X")


class LivePipeline:
    """`pipeline run --config FILE [args]` in a subprocess; stderr (JSON lines) to a file."""

    def __init__(self, config_path: Path, *args: str, log_path: Path | None = None) -> None:
        self.config_path = Path(config_path)
        self.args = args
        self.log_path = log_path or self.config_path.with_name("pipeline-run.log")
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> LivePipeline:
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "pipeline", "run", "--log-json",
                 "--config", str(self.config_path), *self.args],
                stdout=subprocess.DEVNULL,
                stderr=log,
            )  # fmt: skip
        return self

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> int:
        """Send *sig* and wait for the exit code."""
        assert self.process is not None
        self.process.send_signal(sig)
        return self.process.wait(timeout)

    def kill(self) -> None:
        assert self.process is not None
        self.process.kill()
        self.process.wait(30)

    def events(self) -> list[dict[str, Any]]:
        """Every JSON log line so far."""
        out: list[dict[str, Any]] = []
        for line in self.log_path.read_bytes().splitlines():
            try:
                value = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if isinstance(value, dict):
                out.append(value)
        return out

    def run_state(self, index_dir: Path) -> dict[str, Any] | None:
        try:
            state = orjson.loads((index_dir / "run" / "supervisor.json").read_bytes())
        except (FileNotFoundError, orjson.JSONDecodeError):
            return None
        return state if isinstance(state, dict) and state.get("pid") == self.pid else None

    def wait_ready(self, index_dir: Path, timeout: float = 30.0) -> dict[str, Any]:
        """Until every child of this run says it is running."""

        def ready() -> dict[str, Any] | None:
            state = self.run_state(index_dir)
            children = state.get("children", []) if state else []
            if children and all(c.get("state") == "running" for c in children):
                return state
            assert self.process is not None and self.process.poll() is None, "exited early"
            return None

        return wait_for(ready, timeout=timeout, what="every pipeline process to be running")
