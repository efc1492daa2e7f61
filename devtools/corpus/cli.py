"""``python -m devtools.corpus --out DIR --sessions N --mean-kb K --seed S [--agents …]``."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from devtools.corpus.generate import generate

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m devtools.corpus",
        description="Write a deterministic synthetic corpus of agent session files.",
    )
    parser.add_argument("--out", type=Path, required=True, help="corpus directory (empty or new)")
    parser.add_argument("--sessions", type=int, required=True, help="number of sessions")
    parser.add_argument(
        "--mean-kb", type=int, default=128, help="mean session size in KB (default 128)"
    )
    parser.add_argument(
        "--seed", type=int, default=1, help="seed; same args, same bytes (default 1)"
    )
    parser.add_argument(
        "--agents",
        default="pi",
        help="comma-separated subset of pi,claude,codex,gemini,qwen (default: pi)",
    )
    parser.add_argument(
        "--force", action="store_true", help="replace the corpus an earlier run left in --out"
    )
    parser.add_argument(
        "--no-malformed",
        action="store_true",
        help="leave out the cut-off lines planted in 1 of 50 sessions (complete coverage)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status (2 for bad arguments or a non-empty ``--out``)."""
    args = _parser().parse_args(argv)
    agents = tuple(a.strip() for a in args.agents.split(",") if a.strip())
    started = time.perf_counter()
    try:
        manifest = generate(
            args.out,
            sessions=args.sessions,
            mean_kb=args.mean_kb,
            seed=args.seed,
            agents=agents,
            force=args.force,
            malformed_lines=not args.no_malformed,
        )
    except (ValueError, FileExistsError) as exc:
        print(f"devtools.corpus: {exc}", file=sys.stderr)
        return 2
    elapsed = time.perf_counter() - started
    totals = manifest.totals
    print(
        f"wrote {totals.files} files ({totals.sessions} sessions, {totals.bytes / 1e6:.1f} MB, "
        f"{len(manifest.planted)} planted + {len(manifest.off_branch)} off-branch terms, "
        f"{len(manifest.malformed)} malformed lines) to {args.out} in {elapsed:.1f}s"
    )
    return 0
