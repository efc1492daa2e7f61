"""Hostile session files cost bounded memory and time, and are named (issue 22, item 8).

Before: three 10 MB lines of ``{}{}…`` cost 1.9 GB RSS and 200-400 s (five million records
each), three 1 GiB sparse files 2.1 GB. Now a line past ``MAX_LINE_BYTES`` is skipped
unread, one of more than ``MAX_LINE_OBJECTS`` concatenated objects as soon as it has that
many, both named ``oversized_line``, and a sparse file's unterminated run of NULs is never
copied. A file larger than ``[sources] maxFileBytes`` is not read at all, named
``oversized_file``: before, a 512 MiB sparse file cost its size in memory twice over (read in
chunks, then joined). The default run uses a 96 MiB sparse file (under the cap) and one of
512 MiB (over it); ``SESSIONDEX_ATTACKS=full`` three of 1 GiB. Each case prints its figures
(wall time, peak RSS of the `run --once` process).
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson

from query.engine import Engine
from stages.parse import MAX_LINE_BYTES
from store.config import DEFAULT_MAX_FILE_BYTES
from store.reasons import OVERSIZED_FILE
from tests.helpers import PiRoot, header, jsonl, user

T0 = 1_700_000_000_000
FULL = os.environ.get("SESSIONDEX_ATTACKS") == "full"
MIB = 1 << 20


def run_once_alone(root: PiRoot) -> tuple[float, int]:
    """`pipeline run --once` under a fresh parent: (wall seconds, peak RSS in MB of it and its
    workers), not raised by any child this test process reaped before."""
    command = [sys.executable, "-m", "pipeline", "run", "--once", "--config", str(root.config_path)]
    probe = (
        "import resource, subprocess, sys, time\n"
        "t = time.perf_counter()\n"
        f"done = subprocess.run({command!r}, capture_output=True)\n"
        "sys.stderr.buffer.write(done.stderr[-2000:])\n"
        "print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
        "sys.exit(done.returncode)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    wall, peak = done.stdout.split()
    return float(wall), int(peak) // 1024


def run_once(root: PiRoot) -> tuple[float, int]:
    """`pipeline run --once` in a child: (wall seconds, the child's peak RSS in MB)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "pipeline", "run", "--once", "--config", str(root.config_path)],
        capture_output=True, timeout=900,
    )  # fmt: skip
    wall = time.perf_counter() - started
    assert done.returncode == 0, done.stderr[-2000:]
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    # ru_maxrss of children is the largest of any reaped child: only a rise is this run's
    return wall, max(peak, before) // 1024


def recall(root: PiRoot, term: str) -> dict[str, Any]:
    with Engine(root.write_config()) as engine:
        result: dict[str, Any] = engine.recall({"query": term, "scope": "global"})
    return result


def test_lines_of_concatenated_empty_objects(tmp_path: Path) -> None:
    root = PiRoot(tmp_path)
    root.write_config()
    for n in range(3):
        path = root.session(f"b{n}", [header(f"b{n}", "/w"), user("u1", None, "numbatbefore", T0)])
        with path.open("ab") as f:
            f.write(b"{}" * (5 * MIB) + b"\n")  # 10 MB, five million objects
            f.write(jsonl([user("u2", "u1", "numbatafter", T0 + 1)]))
    wall, rss = run_once(root)
    print(
        f"\nhostile: three 10 MB lines of {{}}{{}}...: run --once {wall:.1f} s, peak RSS {rss} MB"
    )
    found = recall(root, "numbatafter")
    assert found["total"] == 3, "the lines around them are indexed"
    assert "oversized_line" in found["coverage"]["reasons"]
    assert found["coverage"]["complete"] is False
    assert rss < 1024, "was 1.9 GB"


def test_sparse_files_are_named_not_read_as_lines(tmp_path: Path) -> None:
    root = PiRoot(tmp_path)
    root.write_config()
    size = 96 * MIB
    assert MAX_LINE_BYTES < size < DEFAULT_MAX_FILE_BYTES
    for n in range(3 if FULL else 1):
        path = root.session(f"z{n}", [header(f"z{n}", "/w"), user("u1", None, "numbatzero", T0)])
        with path.open("r+b") as f:
            f.truncate(size)  # a hole: NULs to the end, no newline, no disk used
        old = time.time() - 86_400
        os.utime(path, (old, old))
    # and one whose hole is followed by a line (a writer that went on after a crash)
    path = root.session("zz", [header("zz", "/w"), user("u1", None, "numbatzero", T0)])
    with path.open("r+b") as f:
        f.truncate(size)
        f.seek(size)
        f.write(b"\n" + orjson.dumps(user("u2", "u1", "numbatresumed", T0 + 1)) + b"\n")
    wall, rss = run_once(root)
    print(
        f"\nhostile: {3 if FULL else 1} sparse file(s) of {size // MIB} MiB and one with a line "
        f"after its hole: run --once {wall:.1f} s, peak RSS {rss} MB"
    )
    found = recall(root, "numbatzero")
    assert found["total"] == (4 if FULL else 2)
    assert "oversized_line" in found["coverage"]["reasons"]
    assert recall(root, "numbatresumed")["total"] == 1


def test_a_file_over_the_cap_is_named_not_read(tmp_path: Path) -> None:
    root = PiRoot(tmp_path)
    root.write_config()
    size = (1 << 30) if FULL else 512 * MIB
    assert size > DEFAULT_MAX_FILE_BYTES
    root.session("ok", [header("ok", "/w"), user("u1", None, "numbatkept", T0)])
    for n in range(3 if FULL else 1):
        path = root.session(f"h{n}", [header(f"h{n}", "/w"), user("u1", None, "numbathuge", T0)])
        with path.open("r+b") as f:
            f.truncate(size)  # a hole: no disk used, but read whole it is `size` bytes
            f.seek(size)
            f.write(b"\n" + orjson.dumps(user("u2", "u1", "numbathuge", T0 + 1)) + b"\n")
    wall, rss = run_once_alone(root)
    print(
        f"\nhostile: {3 if FULL else 1} sparse file(s) of {size // MIB} MiB over maxFileBytes: "
        f"run --once {wall:.1f} s, peak RSS {rss} MB"
    )
    # far below one file's size (the process alone is ~80 MB; before, it was over 1 GB)
    assert rss < 320, f"peak RSS {rss} MB for a file of {size // MIB} MiB"
    kept = recall(root, "numbatkept")
    assert kept["total"] == 1, "the other sessions are indexed"
    huge = recall(root, "numbathuge")
    assert huge["total"] == 0
    assert OVERSIZED_FILE in huge["coverage"]["reasons"], huge["coverage"]
    assert huge["coverage"]["complete"] is False, "the empty answer is not authoritative"
