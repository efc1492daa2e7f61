"""Append-to-searchable latency: append entries at a steady rate, poll until found.

One process appends and polls, so both ends use one clock. Each appended entry carries a
fresh unique term. Most are user messages; a Claude Code session cycles through a user
message, a new assistant reply, and a second block of that reply on its own line with the
reply's message id, as Claude Code streams one (that line changes an entry already indexed,
which an index must then replace). An entry's latency is the time from the append's
``fsync`` to the first answer that contains a hit. The poll cost (one query per pending
term) is part of the latency, as it is for a user; ``poll_ms`` reports it. Poll rounds are
2 ms apart (for every tool measured), so the bench does not take the CPUs of the pipeline it
is timing.

    python -m devtools.bench.fresh --config FILE --sessions JSON --rate R --count N [--first]

With ``--first PID`` (the bench passes it right after starting ``pipeline run``, whose pid
it is), one append is timed before the steady run: the first append after start-up
(``first_ms``), made the moment that run says it is ready (``pipeline.ready``: every process
up, the first reconcile done, the workers warm), which is when the index answers for it;
``start_ms`` is how long that took from the spawn (``--spawned-at``, epoch seconds).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from devtools.bench.corpus import append_entry, canary_term
from devtools.bench.procs import percentiles

Searcher = Callable[[str], bool]


POLL_PAUSE_S = 0.002  # between poll rounds: the resolution of the measurement
# What each round of appends writes to a session, by agent (see the module docstring).
KINDS = {"claude": ("user", "assistant", "assistant-continued")}


def measure(
    search: Searcher,
    sessions: list[tuple[str, str]],
    *,
    rate: float,
    count: int,
    timeout: float = 30.0,
    seed: int | None = None,
) -> dict[str, Any]:
    # Unseeded by default: a run again on the same corpus must not append terms an earlier
    # run appended (they are indexed already, and would be "found" before they are new).
    rng = random.Random(seed if seed is not None else os.urandom(16))
    interval = 1.0 / rate
    pending: dict[str, float] = {}
    latencies: list[float] = []
    poll: list[float] = []
    missed = 0
    appended = 0
    next_at = time.perf_counter()
    started = next_at
    while appended < count or pending:
        now = time.perf_counter()
        if appended < count and now >= next_at:
            path, agent = sessions[appended % len(sessions)]
            kinds = KINDS.get(agent, ("user",))
            kind = kinds[appended // len(sessions) % len(kinds)]
            term = canary_term(rng)
            append_entry(Path(path), agent, kind, f"fresh note {term} appended by the bench")
            pending[term] = time.perf_counter()
            appended += 1
            next_at += interval
        for term, t0 in list(pending.items()):
            q0 = time.perf_counter()
            found = search(term)
            q1 = time.perf_counter()
            poll.append((q1 - q0) * 1000)
            if found:
                latencies.append((q1 - t0) * 1000)
                del pending[term]
            elif q1 - t0 > timeout:
                missed += 1
                del pending[term]
        if not pending:
            time.sleep(max(0.0, min(0.005, next_at - time.perf_counter())))
        else:
            # A poll round takes ~0.2 ms against a warm server: unpaced, the bench would ask
            # thousands of times a second and take the CPUs the pipeline it measures needs.
            time.sleep(POLL_PAUSE_S)
    return {
        "appends": appended,
        "sessions": len(sessions),
        "rate_per_s": rate,
        "seconds": time.perf_counter() - started,
        "missed": missed,
        "timeout_s": timeout,
        "latency_ms": percentiles(latencies),
        "poll_ms": percentiles(poll),
    }


def wait_ready(index_dir: Path, pid: int, spawned_at: float, timeout: float = 60.0) -> float | None:
    """Milliseconds from *spawned_at* until the run *pid* says it is ready (None: never)."""
    from pipeline.supervisor import read_run_state

    while time.time() - spawned_at < timeout:
        state = read_run_state(index_dir) or {}
        if state.get("pid") == pid and state.get("ready"):
            return (time.time() - spawned_at) * 1000
        time.sleep(POLL_PAUSE_S)
    return None


def measure_first(
    search: Searcher, session: tuple[str, str], *, timeout: float = 60.0
) -> dict[str, Any]:
    """The first append after start-up (issue 22, item 11): the pipeline was just started
    over an index that already answers and has said it is ready; one entry is appended at
    once and timed the same way (append's fsync to the first answer with a hit). What the
    start leaves cold (a worker's first session, the query process's next generation) lands
    on it, where a steady run amortizes it."""
    rng = random.Random(os.urandom(16))
    path, agent = session
    term = canary_term(rng)
    append_entry(Path(path), agent, KINDS.get(agent, ("user",))[0], f"first note {term}")
    t0 = time.perf_counter()
    while not search(term):
        if time.perf_counter() - t0 > timeout:
            return {"first_ms": None, "first_missed": True}
        time.sleep(POLL_PAUSE_S)
    return {"first_ms": (time.perf_counter() - t0) * 1000, "first_missed": False}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", required=True)
    parser.add_argument("--sessions", required=True, help="JSON list of [path, agent]")
    parser.add_argument("--rate", type=float, default=5.0)
    parser.add_argument("--count", type=int, default=100)
    parser.add_argument("--timeout", type=float, default=30.0)
    parser.add_argument("--server", action="store_true", help="ask the running query serve")
    parser.add_argument(
        "--first",
        type=int,
        metavar="PID",
        help="time one append first, once the just started `pipeline run` PID is ready",
    )
    parser.add_argument("--spawned-at", type=float, help="when PID was started (epoch seconds)")
    ns = parser.parse_args()
    from query.transport import Backend
    from store.config import load_config
    from store.errors import SnapshotMissing

    # Through the running query serve when there is one, as the CLI would.
    config = load_config(ns.config)
    backend = Backend(config, server="require" if ns.server else "off")

    def search(term: str) -> bool:
        try:
            result = backend.recall({"query": term, "scope": "global"}, cwd="/")
        except SnapshotMissing:
            return False
        return bool(result.get("hits"))

    sessions = [(str(p), str(a)) for p, a in json.loads(Path(ns.sessions).read_text())]
    first: dict[str, Any] = {}
    if ns.first is not None:
        # The index answers before the append (the case): this process's first
        # question, which also connects it to the query process, is not billed to the append.
        search(canary_term(random.Random(os.urandom(16))))
        start_ms = wait_ready(config.index_dir, ns.first, ns.spawned_at or time.time())
        first = {"start_ms": start_ms, "first_missed": start_ms is None, "first_ms": None}
        if start_ms is not None:
            first.update(measure_first(search, sessions[-1]))
    report = measure(search, sessions, rate=ns.rate, count=ns.count, timeout=ns.timeout)
    report.update(first)
    sys.stdout.write(json.dumps(report) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
