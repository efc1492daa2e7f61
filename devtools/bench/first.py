"""The first append after start-up, repeated (issue 22, item 11), without the whole bench.

One small corpus is generated and built once and ``query serve`` started over it; then, per
round, ``pipeline run`` is started and, once it says it is ready, one entry is appended and
timed (as ``ops/bench`` does in its freshness step, ``bench.fresh --first``), followed by a
short steady run of appends, and the pipeline is stopped. Prints each round, then the median
and max of the first appends beside the steady p95s of the same rounds and the start-up
times, and one JSON object last.

    python -m devtools.bench.first [--rounds 5] [--sessions 100] [--count 40] [--work DIR]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from devtools.bench.cli import _bin, _build, _fresh_ours, _fresh_sessions, _Serve
from devtools.bench.corpus import ensure_corpus, write_config


def main() -> int:
    p = argparse.ArgumentParser(prog="python -m devtools.bench.first")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--sessions", type=int, default=100)
    p.add_argument("--mean-kb", type=int, default=128)
    p.add_argument("--count", type=int, default=40, help="steady appends per round")
    p.add_argument("--rate", type=float, default=5.0)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--work", type=Path)
    ns = p.parse_args()
    work = (ns.work or Path(tempfile.gettempdir()) / "sessiondex-first").resolve()
    work.mkdir(parents=True, exist_ok=True)
    corpus, index, cfg = work / "corpus", work / "index", work / "config.toml"
    manifest, _ = ensure_corpus(corpus, ns.sessions, ns.mean_kb, ns.seed, sys.executable)
    write_config(cfg, corpus, index)
    _build(cfg, index, None)
    sessions = _fresh_sessions(corpus, manifest)
    notes: list[str] = []
    serve = _Serve.start(cfg, index, notes)
    fresh = argparse.Namespace(fresh_rate=ns.rate, fresh_count=ns.count)
    rounds: list[dict[str, Any]] = []
    try:
        for n in range(ns.rounds):
            r = _fresh_ours(cfg, work, sessions, fresh, serve is not None)
            rounds.append(r)
            first, p95 = r.get("first_ms"), (r.get("latency_ms") or {}).get("p95")
            start = r.get("start_ms")
            sys.stderr.write(
                f"round {n + 1}: ready after {start} ms, first {first} ms, steady p95 {p95} ms\n"
            )
    finally:
        if serve is not None:
            serve.stop()
    firsts = [r["first_ms"] for r in rounds if r.get("first_ms") is not None]
    starts = [r["start_ms"] for r in rounds if r.get("start_ms") is not None]
    p95s = [r["latency_ms"]["p95"] for r in rounds if r.get("latency_ms")]
    summary = {
        "pipeline": _bin("pipeline"),
        "rounds": len(rounds),
        "first_missed": sum(1 for r in rounds if r.get("first_missed")),
        "first_median_ms": statistics.median(firsts) if firsts else None,
        "first_max_ms": max(firsts) if firsts else None,
        "first_ms": firsts,
        "start_median_ms": statistics.median(starts) if starts else None,
        "start_ms": starts,
        "steady_p95_ms": p95s,
        "steady_p95_median_ms": statistics.median(p95s) if p95s else None,
        "notes": notes,
    }
    sys.stdout.write(json.dumps(summary) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
