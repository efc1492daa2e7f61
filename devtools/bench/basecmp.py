"""Build throughput against another commit: ours and a base checkout's, in A/B pairs.

``--base DIR`` names a checkout of an earlier commit with its own virtual environment
(``git worktree add DIR <commit>``, then ``python3 -m venv DIR/.venv`` and
``DIR/.venv/bin/pip install -e DIR``). Each pair builds the same corpus from empty with our
``pipeline run --once`` and then with the base's, one right after the other, so a change of
load on the machine hits both sides of a pair alike; the ratios reported are the medians of
the pairs' ratios, of wall time and of CPU time (user + system of the whole process tree).
Bytecode is written as a user's installation would have it (``PYTHONDONTWRITEBYTECODE`` is
dropped for these runs, and one unmeasured build of each side comes first), so neither side
pays for compiling its sources on every run.
"""

from __future__ import annotations

import os
import re
import shutil
import statistics
import subprocess
from pathlib import Path
from typing import Any

from devtools.bench.bytecode import compile_bytecode
from devtools.bench.procs import Measured, run_measured

__all__ = ["base_cost", "base_pipeline"]


def base_pipeline(base: Path) -> Path:
    """The base checkout's ``pipeline`` entry point; SystemExit when it has none."""
    found = base / ".venv" / "bin" / "pipeline"
    if not found.exists():
        raise SystemExit(f"--base {base}: no {found} (make its venv first; see bench.basecmp)")
    return found


def _commit(base: Path) -> str:
    done = subprocess.run(
        ["git", "-C", str(base), "log", "-1", "--format=%h %s"], capture_output=True, text=True
    )
    return done.stdout.strip() if done.returncode == 0 else "?"


def _config(cfg: Path, work: Path, tag: str) -> tuple[Path, Path]:
    text = cfg.read_text()
    index = work / f"vs-{tag}" / "index"
    text = text.replace(text.split("indexDir = ")[1].split("\n")[0], f'"{index}"')
    path = work / f"vs-{tag}.toml"
    path.write_text(text)
    return path, index


def _known_sources(pipeline: Path, cfg: Path) -> None:
    """Drop from *cfg* the ``[sources]`` agents *pipeline* (an older base) does not know: it
    refuses the whole file over one (``unknown key sources.omp``), and an agent it does not
    know has no default root it could read instead."""
    for _ in range(64):
        done = subprocess.run(
            [str(pipeline), "config", "--config", str(cfg)], capture_output=True, text=True
        )
        unknown = re.search(r"unknown key sources\.([A-Za-z0-9_-]+)", done.stderr)
        if done.returncode == 0 or unknown is None:
            return
        lines = cfg.read_text().splitlines()
        cfg.write_text("".join(f"{x}\n" for x in lines if not x.startswith(f"{unknown[1]} =")))


def _once(pipeline: Path, cfg: Path, index: Path, processes: int | None) -> Measured:
    shutil.rmtree(index.parent, ignore_errors=True)
    argv = [str(pipeline), "run", "--once", "--config", str(cfg), "--quiet"]
    if processes:
        argv += ["--processes", str(processes)]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    m = run_measured(argv, env=env)
    if m.returncode not in (0, 1):
        raise subprocess.SubprocessError(f"{argv}: {m.stderr[-500:]}")
    return m


def base_cost(
    ours: Path,
    base: Path,
    cfg: Path,
    work: Path,
    *,
    pairs: int,
    processes: int | None,
) -> dict[str, Any]:
    """*pairs* builds of ours and of *base* (a checkout), alternating; see the module doc."""
    sides = {"ours": (ours, *_config(cfg, work, "ours")), "base": (base_pipeline(base),)}
    sides["base"] += _config(cfg, work, "base")
    _known_sources(sides["base"][0], sides["base"][1])
    compile_bytecode(sides["base"][0].parent / "python", base)  # as ours (bench.bytecode)
    for pipeline, path, index in sides.values():
        _once(pipeline, path, index, processes)  # warms the page cache; not measured
    out: dict[str, Any] = {"base": str(base), "commit": _commit(base), "pairs": []}
    for _ in range(pairs):
        row = {}
        for name, (pipeline, path, index) in sides.items():
            m = _once(pipeline, path, index, processes)
            row[name] = {"seconds": m.seconds, "cpu_s": m.user_s + m.sys_s}
        out["pairs"].append(
            {
                **row,
                "wall_ratio": row["ours"]["seconds"] / row["base"]["seconds"],
                "cpu_ratio": row["ours"]["cpu_s"] / row["base"]["cpu_s"],
            }
        )
    for _, _, index in sides.values():
        shutil.rmtree(index.parent, ignore_errors=True)
    if out["pairs"]:
        for key in ("wall_ratio", "cpu_ratio"):
            out[key] = round(statistics.median(p[key] for p in out["pairs"]), 4)
        for side in ("ours", "base"):
            for key in ("seconds", "cpu_s"):
                out[f"{side}_{key}"] = statistics.median(p[side][key] for p in out["pairs"])
    return out
