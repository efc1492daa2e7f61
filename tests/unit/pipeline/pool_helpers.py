"""What the worker processes of the pool tests run: module-level, so a spawned worker imports
them by name."""

from __future__ import annotations

import os
import signal
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pipeline.lexicon import build_bucket
from pipeline.session_job import Job, JobResult, index_sessions

POISON = "poison"


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)  # as the kernel's OOM killer would


def index_or_die(jobs: Sequence[Job]) -> list[JobResult]:
    """Index the jobs one by one; a job whose file name holds POISON kills the worker."""
    results: list[JobResult] = []
    for job in jobs:
        if POISON in Path(job.path).name:
            _die()
        results.extend(index_sessions([job]))
    return results


def index_killed_once(jobs: Sequence[Job]) -> list[JobResult]:
    """As if an operator or the OOM killer ended the worker once, whatever it was doing: the
    first job started after the marker folder exists kills its worker; every later one is
    indexed (the marker lives beside the index, shared by every worker)."""
    results: list[JobResult] = []
    for job in jobs:
        marker = Path(job.index_dir).parent / "killed-once"
        if not marker.exists():
            marker.mkdir(parents=True, exist_ok=True)
            _die()
        results.extend(index_sessions([job]))
    return results


def index_raises(jobs: Sequence[Job]) -> list[JobResult]:
    raise RuntimeError("a bug outside the per-session guard")


def bucket_dies(index_dir: str, digests: tuple[str, ...]) -> tuple[str, int]:
    _die()
    raise AssertionError("unreachable")


def bucket_dies_once(index_dir: str, digests: tuple[str, ...]) -> tuple[str, int]:
    marker = Path(index_dir) / "died-once"
    if not marker.exists():
        marker.touch()
        _die()
    return build_bucket(index_dir, digests)


def bucket_raises(index_dir: str, digests: tuple[str, ...]) -> tuple[str, int]:
    raise OSError(28, "No space left on device")


def bucket_fails(index_dir: str, digests: tuple[str, ...]) -> tuple[str, int]:
    raise ValueError("a bug in the builder")


def die_at_start(conn: Any) -> None:
    os._exit(1)


def bucket_raises_once(index_dir: str, digests: tuple[str, ...]) -> tuple[str, int]:
    marker = Path(index_dir) / "raised-once"
    if not marker.exists():
        marker.touch()
        raise OSError(28, "No space left on device")
    return build_bucket(index_dir, digests)


WARMED: list[str] = []  # what the pool's prepare loaded in the parent, before its forks


def warm() -> None:
    WARMED.append("warm")


def index_if_warm(jobs: Sequence[Job]) -> list[JobResult]:
    """Index the jobs in a worker that has what ``warm`` loaded in its parent, else raise."""
    if WARMED != ["warm"]:
        raise RuntimeError(f"a cold worker: {WARMED}")
    return index_sessions(jobs)


def _log_to(index_dir: str, line: str) -> None:
    with (Path(index_dir).parent / "order.log").open("a") as log:
        log.write(line + "\n")


def index_logged(jobs: Sequence[Job]) -> list[JobResult]:
    """Index the jobs, first writing down which message this is (its first job's name)."""
    _log_to(jobs[0].index_dir, f"unit {Path(jobs[0].path).name}")
    return index_sessions(jobs)


def bucket_logged(index_dir: str, digests: tuple[str, ...]) -> tuple[str, int]:
    """Write down which bucket runs (its first digest), build nothing."""
    _log_to(index_dir, f"bucket {digests[0]}")
    return digests[0], 0
