"""What the archive costs: bytes kept per source byte, and build time with it against without.

The build time is measured in A/B pairs (``[archive] keep = false`` then ``keep = true``, each
from an empty index, one after the other) so that a change of load on the machine hits both
sides of a pair alike; the ratio reported is the median of the pairs' ratios.
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
from pathlib import Path
from typing import Any

from devtools.bench.procs import run_measured

__all__ = ["archive_cost"]


def _du(path: Path) -> int:
    total = 0
    for p in path.rglob("*") if path.exists() else ():
        if p.is_file():
            total += p.stat().st_size
    return total


def _config(base: Path, keep: bool, work: Path, tag: str) -> tuple[Path, Path, Path]:
    text = base.read_text()
    index = work / f"ab-{tag}" / "index"
    archive = work / f"ab-{tag}" / "archive"
    text = text.replace(text.split("indexDir = ")[1].split("\n")[0], f'"{index}"')
    text += f'\n[archive]\nkeep = {"true" if keep else "false"}\ndir = "{archive}"\n'
    path = work / f"ab-{tag}.toml"
    path.write_text(text)
    return path, index, archive


def archive_cost(
    pipeline: str,
    cfg: Path,
    work: Path,
    archive_dir: Path,
    source_bytes: int,
    *,
    pairs: int,
    processes: int | None,
) -> dict[str, Any]:
    kept = _du(archive_dir)
    out: dict[str, Any] = {
        "bytes": kept,
        "bytes_per_source_byte": round(kept / source_bytes, 4) if source_bytes else None,
        "pairs": [],
    }
    if pairs <= 0:
        return out
    off = _config(cfg, False, work, "off")
    on = _config(cfg, True, work, "on")
    for _ in range(pairs):
        row: list[tuple[float, float]] = []
        for path, index, _ in (off, on):
            shutil.rmtree(index.parent, ignore_errors=True)
            argv = [pipeline, "run", "--once", "--config", str(path), "--quiet"]
            if processes:
                argv += ["--processes", str(processes)]
            m = run_measured(argv)
            if m.returncode not in (0, 1):
                raise subprocess.SubprocessError(f"{argv}: {m.stderr[-500:]}")
            row.append((m.seconds, m.user_s + m.sys_s))
        (off_s, off_cpu), (on_s, on_cpu) = row
        out["pairs"].append(
            {
                "without_s": off_s,
                "with_s": on_s,
                "ratio": on_s / off_s,
                # CPU seconds of the whole tree: wall time on a busy machine is mostly others'
                "without_cpu_s": off_cpu,
                "with_cpu_s": on_cpu,
                "cpu_ratio": on_cpu / off_cpu if off_cpu else None,
            }
        )
    for _, index, _ in (off, on):
        shutil.rmtree(index.parent, ignore_errors=True)
    out["build_ratio"] = round(statistics.median(p["ratio"] for p in out["pairs"]), 4)
    cpu = [p["cpu_ratio"] for p in out["pairs"] if p["cpu_ratio"] is not None]
    out["build_cpu_ratio"] = round(statistics.median(cpu), 4) if cpu else None
    return out
