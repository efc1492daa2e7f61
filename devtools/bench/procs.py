"""Process measurement without psutil: wall time, peak RSS of a process tree, kernel I/O.

Peak RSS of a tree is sampled from ``/proc`` (sum of the resident size over the process and
every descendant, every ``interval`` seconds), so short-lived workers between two samples can be
missed; the sampled peak is a lower bound and is reported as such. The sampler shares the
machine with what it measures, so a sample reads one small ``statm`` file per known process and
the tree is looked up again (a scan of every ``/proc/PID/stat``, ~1 ms of CPU) only every few
samples: scanning at every sample took ~5 % of a CPU, which a tool running a process per CPU
paid in wall time and a one-process tool did not. Bytes a child wrote are
read from this process's own ``/proc/self/io`` before and after the child is reaped: the kernel
adds a reaped child's counters (and those it reaped itself) to its parent's.
"""

from __future__ import annotations

import math
import os
import resource
import statistics
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = [
    "Measured",
    "TreeSampler",
    "io_counters",
    "percentiles",
    "resident_kb",
    "rss_kb",
    "run_measured",
    "tree_pids",
    "tree_rss_kb",
]


def _children() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # The command name may hold spaces and parentheses: split after the last ')'.
        ppid = int(stat[stat.rfind(b")") + 2 :].split()[1])
        kids.setdefault(ppid, []).append(int(name))
    return kids


def tree_pids(root: int) -> list[int]:
    """``root`` and every process descending from it (a snapshot)."""
    kids = _children()
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(kids.get(pid, ()))
    return out


def rss_kb(pid: int, field: str = "VmRSS") -> int:
    """``VmRSS`` (or ``VmHWM``, the process's own peak) of one process in KiB; 0 if gone."""
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith(field.encode() + b":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def tree_rss_kb(root: int) -> int:
    return sum(rss_kb(p) for p in tree_pids(root))


_PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024


def resident_kb(pid: int) -> int:
    """The resident size of one process in KiB (``VmRSS``, read from ``statm``); 0 if gone."""
    try:
        fd = os.open(f"/proc/{pid}/statm", os.O_RDONLY)
    except OSError:
        return 0
    try:
        fields = os.read(fd, 128).split()
    except OSError:
        return 0
    finally:
        os.close(fd)
    return int(fields[1]) * _PAGE_KB if len(fields) > 1 else 0


class TreeSampler:
    """Samples the summed RSS of a process tree in a thread until ``stop``.

    The tree's members are looked up every ``rescan`` samples (a process started since is
    counted from the next lookup); each sample in between reads their resident sizes only.
    """

    def __init__(self, pid: int, interval: float = 0.02, rescan: int = 5) -> None:
        self.pid = pid
        self.interval = interval
        self.rescan = max(1, rescan)
        self.peak_kb = 0
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        pids: list[int] = []
        while not self._stop.is_set():
            if self.samples % self.rescan == 0:
                pids = tree_pids(self.pid)
            self.peak_kb = max(self.peak_kb, sum(map(resident_kb, pids)))
            self.samples += 1
            self._stop.wait(self.interval)

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.peak_kb


def io_counters() -> dict[str, int]:
    """This process's ``/proc/self/io`` (includes reaped children); empty where unavailable."""
    try:
        with open("/proc/self/io") as f:
            return {k: int(v) for k, v in (line.split(": ") for line in f)}
    except OSError:
        return {}


@dataclass(frozen=True, slots=True)
class Measured:
    argv: tuple[str, ...]
    returncode: int
    seconds: float
    peak_rss_kb: int
    wchar: int  # bytes passed to write() by the tree, stdout and stderr pipes included
    write_bytes: int  # bytes the tree caused to be sent to storage
    stdout: str
    stderr: str
    # CPU seconds of the processes it waited for (a tool that reaps its workers counts them)
    user_s: float = 0.0
    sys_s: float = 0.0


def run_measured(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    timeout: float | None = None,
) -> Measured:
    """Run ``argv`` to completion, measuring wall time, sampled peak tree RSS and its writes.

    What was written before is flushed first, so a run is not billed for the writeback of
    what ran before it (the corpus generator's 100 MB to 1 GB, another tool's index): a
    tool that syncs would otherwise wait for it, one that does not would not.
    """
    os.sync()
    before = io_counters()
    cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.Popen(
        list(argv),
        env=dict(env) if env is not None else None,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    sampler = TreeSampler(proc.pid)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    seconds = time.perf_counter() - started
    peak = sampler.stop()
    after = io_counters()
    cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
    return Measured(
        argv=tuple(argv),
        returncode=proc.returncode,
        seconds=seconds,
        peak_rss_kb=peak,
        wchar=after.get("wchar", 0) - before.get("wchar", 0),
        write_bytes=after.get("write_bytes", 0) - before.get("write_bytes", 0),
        stdout=out,
        stderr=err,
        user_s=cpu.ru_utime - cpu_before.ru_utime,
        sys_s=cpu.ru_stime - cpu_before.ru_stime,
    )


def percentiles(values: Sequence[float]) -> dict[str, float | int]:
    """p50 / p95 / p99 (nearest rank) and count of ``values``; empty when there are none."""
    if not values:
        return {"n": 0}
    ordered = sorted(values)

    def rank(p: float) -> float:  # nearest rank: the smallest value with p% at or below it
        return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]

    return {
        "n": len(ordered),
        "p50": rank(50),
        "p95": rank(95),
        "p99": rank(99),
        "mean": statistics.fmean(ordered),
    }
