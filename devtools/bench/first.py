"""The first append after start-up, repeated (issue 22, item 11), without the whole bench.

One small corpus is generated and built once and ``query serve`` started over it; then, per
round, ``pipeline run`` is started and, once it says it is ready, one entry is appended and
timed (as ``ops/bench`` does in its freshness step, ``bench.fresh --first``), followed by a
short steady run of appends, and the pipeline is stopped. Prints each round, then the median
and max of the first appends beside the steady p95s of the same rounds and the start-up
times, and one JSON object last.

With ``--while-starting`` a round is the issue's own case instead: ``query serve`` and
``pipeline run`` are started together over the built index (as at login); as soon as a recall
answers (through the server, or in-process while none answers yet), one entry is appended to
the newest session and timed until a recall finds it, while both are still starting. Each
round reports when the recall first answered (``answer_ms``, from the spawn) and the append's
latency (``first_ms``); then ``--next`` more appends follow at ``--rate`` while both keep
running (the issue's "next nine"), timed the same way, and both processes are stopped. The
summary sets the first appends beside the p95 of those next ones. ``--cli`` probes with a new
``query recall`` process each time, as the issue measured, instead of one in-process client
(then every latency includes the CLI's own start).

    python -m devtools.bench.first [--rounds 5] [--sessions 100] [--count 40] [--work DIR]
    python -m devtools.bench.first --while-starting [--rounds 7] [--next 9] [--cli]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from devtools import ROOT
from devtools.bench.bytecode import compile_bytecode
from devtools.bench.cli import _bin, _build, _fresh_ours, _fresh_sessions, _Serve
from devtools.bench.corpus import append_entry, canary_term, ensure_corpus, write_config
from devtools.bench.fresh import KINDS, POLL_PAUSE_S
from devtools.bench.procs import percentiles


def main() -> int:
    p = argparse.ArgumentParser(prog="python -m devtools.bench.first")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--sessions", type=int, default=100)
    p.add_argument("--mean-kb", type=int, default=128)
    p.add_argument("--count", type=int, default=40, help="steady appends per round")
    p.add_argument("--rate", type=float, default=5.0)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--work", type=Path)
    p.add_argument(
        "--while-starting",
        action="store_true",
        help="append while query serve and pipeline run are still starting (see above)",
    )
    p.add_argument("--next", type=int, default=9, help="with --while-starting: appends after")
    p.add_argument("--cli", action="store_true", help="with --while-starting: probe by CLI")
    ns = p.parse_args()
    work = (ns.work or Path(tempfile.gettempdir()) / "sessiondex-first").resolve()
    work.mkdir(parents=True, exist_ok=True)
    corpus, index, cfg = work / "corpus", work / "index", work / "config.toml"
    sys.stderr.write(compile_bytecode(sys.executable, ROOT) + "\n")
    manifest, _ = ensure_corpus(corpus, ns.sessions, ns.mean_kb, ns.seed, sys.executable)
    write_config(cfg, corpus, index)
    _build(cfg, index, None)
    sessions = _fresh_sessions(corpus, manifest)
    if ns.while_starting:
        summary = while_starting(cfg, sessions, ns.rounds, ns.next, ns.rate, cli=ns.cli)
        sys.stdout.write(json.dumps(summary) + "\n")
        return 0
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


def while_starting(
    cfg: Path, sessions: list[list[str]], rounds: int, following: int, rate: float, *, cli: bool
) -> dict[str, Any]:
    """The first append while everything starts, then *following* more (module docstring):
    the summary of *rounds* rounds. No ``query serve`` or ``pipeline run`` may be running
    over *cfg*'s index (each round starts both)."""
    from query.transport import Backend  # imported before the spawn: not billed to the round
    from store.config import load_config
    from store.errors import StoreError

    config = load_config(str(cfg))
    catch_up = [_bin("pipeline"), "run", "--once", "--config", str(cfg), "--quiet"]
    results: list[dict[str, Any]] = []
    for n in range(rounds):
        subprocess.run(catch_up, check=True)  # the last round's append is in, its merge done
        backend = Backend(config)  # as a user's client: the server, else in-process
        rng = random.Random(os.urandom(16))

        def search(term: str, backend: Backend = backend) -> bool | None:
            """Whether *term* is found; None while nothing answers."""
            if cli:
                probe = subprocess.run(
                    [_bin("query"), "recall", term, "--scope", "global", "--config", str(cfg)],
                    capture_output=True,
                    check=False,
                )
                if probe.returncode not in (0, 1):
                    return None
                return bool(json.loads(probe.stdout).get("hits"))
            try:
                return bool(backend.recall({"query": term, "scope": "global"}, cwd="/")["hits"])
            except (StoreError, OSError):
                return None

        def timed(path: str, agent: str, text: str, rng: random.Random = rng) -> float | None:
            """Append one entry holding a new term; ms until a recall finds it (None: 60 s)."""
            term = canary_term(rng)
            append_entry(Path(path), agent, KINDS.get(agent, ("user",))[0], f"{text} {term}")
            appended = time.perf_counter()
            while not search(term):
                if time.perf_counter() - appended > 60:
                    return None
                time.sleep(POLL_PAUSE_S)
            return round((time.perf_counter() - appended) * 1000, 1)

        spawned = time.perf_counter()
        procs = [
            subprocess.Popen(
                [_bin(name), *argv, "--config", str(cfg), "--quiet"],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            for name, argv in (("query", ["serve"]), ("pipeline", ["run"]))
        ]
        try:
            while search(canary_term(rng)) is None:
                if time.perf_counter() - spawned > 60:
                    raise SystemExit("no recall answered within 60 s of the start")
                time.sleep(POLL_PAUSE_S)
            answered = time.perf_counter()
            path, agent = sessions[0]
            first = timed(path, agent, "first note")
            nexts: list[float | None] = []
            for k in range(following):
                time.sleep(1 / rate)
                path, agent = sessions[(k + 1) % len(sessions)]
                nexts.append(timed(path, agent, "next note"))
        finally:
            for proc in procs:
                proc.send_signal(signal.SIGTERM)
            for proc in procs:
                proc.wait(timeout=30)
            backend.close()
        result = {
            "answer_ms": round((answered - spawned) * 1000, 1),
            "first_ms": first,
            "next_ms": nexts,
            "served_by": "cli" if cli else backend.served_by,
        }
        results.append(result)
        sys.stderr.write(
            f"round {n + 1}: a recall answered {result['answer_ms']} ms after the start, "
            f"the append found {result['first_ms']} ms after it ({result['served_by']}); "
            f"next {nexts}\n"
        )
    firsts = [r["first_ms"] for r in results if r["first_ms"] is not None]
    answers = [r["answer_ms"] for r in results]
    following_ms = [ms for r in results for ms in r["next_ms"] if ms is not None]
    summary = {
        "pipeline": _bin("pipeline"),
        "case": "while-starting",
        "rounds": len(results),
        "first_missed": sum(1 for r in results if r["first_ms"] is None),
        "first_median_ms": statistics.median(firsts) if firsts else None,
        "first_max_ms": max(firsts) if firsts else None,
        "first_ms": firsts,
        "answer_median_ms": statistics.median(answers),
        "answer_ms": answers,
        "next_missed": sum(1 for r in results for ms in r["next_ms"] if ms is None),
        "next_ms": percentiles(following_ms),
        "probe": "query recall CLI" if cli else "in-process client",
    }
    return summary


if __name__ == "__main__":
    sys.exit(main())
