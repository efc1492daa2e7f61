"""``ops/bench``: one run, one corpus, one machine; a table, then one JSON object.

    ops/bench [--size S|M] [--check] [--peers] [--work DIR] [--sessions N --mean-kb K]

Order: generate the corpus and plant the canaries; build our index from empty and rerun it
(no-op); build the FTS5 baseline; measure warm recall per query group through our query
process, the FTS5 index and ``rg -F``; time the ``query recall`` CLI; run the quality checks;
run agentsview (``--peers``); append to 20 sessions with ``pipeline run`` and the query
process live and measure append-to-searchable latency; finally start both again together and
time the first append made while they start (``bench.first --while-starting --cli``). See the
README section "Benchmark".
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from devtools import ROOT
from devtools.bench.archive import archive_cost
from devtools.bench.basecmp import base_cost, base_pipeline
from devtools.bench.bytecode import compile_bytecode
from devtools.bench.corpus import SIZES, ensure_corpus, plant_canaries, write_config
from devtools.bench.floor import socket_floor
from devtools.bench.groups import Query, build_groups
from devtools.bench.procs import percentiles, rss_kb, run_measured, tree_rss_kb
from devtools.bench.quality import run_quality
from devtools.bench.quality_ir import render_quality, run_retrieval
from devtools.bench.redaction import false_positives
from devtools.bench.report import evaluate, render
from devtools.bench.workdir import clear_aside, set_aside
from devtools.bench.workers import Worker

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ops/bench", description=__doc__.split("\n\n")[0])
    p.add_argument("--size", choices=sorted(SIZES), default="S")
    p.add_argument("--sessions", type=int, help="override the size's session count")
    p.add_argument("--mean-kb", type=int, help="override the size's mean session KB")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--work", type=Path, help="work folder (default $TMPDIR/sessiondex-bench/SIZE)")
    p.add_argument("--check", action="store_true", help="exit 1 when a quality check fails")
    p.add_argument("--peers", action="store_true", help="also run agentsview (offline)")
    p.add_argument("--reps", type=int, default=5, help="timed repetitions per query")
    p.add_argument("--per-group", type=int, default=30, help="planted terms per latency group")
    p.add_argument("--cli-runs", type=int, default=10)
    p.add_argument("--fresh-count", type=int, default=100, help="appends (0 skips freshness)")
    p.add_argument("--fresh-rate", type=float, default=5.0, help="appends per second")
    p.add_argument(
        "--start-rounds",
        type=int,
        default=5,
        help="rounds of the first append while query serve and pipeline run start (0 skips)",
    )
    p.add_argument("--no-rg", action="store_true", help="skip the rg baseline")
    p.add_argument(
        "--quality-sample",
        type=int,
        help="check this many planted and off-branch terms (seeded sample) instead of all",
    )
    p.add_argument("--processes", type=int, help="pipeline worker processes")
    p.add_argument(
        "--archive-pairs",
        type=int,
        default=3,
        help="A/B build pairs without and with the archive (0: only its size)",
    )
    p.add_argument(
        "--base",
        type=Path,
        help="a checkout of an earlier commit with its own .venv: build throughput against it "
        "in A/B pairs (bench.basecmp)",
    )
    p.add_argument("--base-pairs", type=int, default=3, help="A/B build pairs with --base")
    p.add_argument("--hot-sessions", type=int, help="memory.hotSessions (default: the default)")
    p.add_argument(
        "--quality-only",
        action="store_true",
        help="only the retrieval-quality table (known-item and natural sets; bench.quality_ir)",
    )
    return p


def _bin(name: str) -> str:
    return str(Path(sys.executable).parent / name)


def _tree(folder: Path) -> dict[str, tuple[int, int]]:
    out = {}
    for base, _, names in os.walk(folder):
        for n in names:
            st = os.stat(os.path.join(base, n))
            out[os.path.join(base, n)] = (st.st_size, st.st_mtime_ns)
    return out


def _last_json(text: str) -> dict[str, Any]:
    for line in reversed(text.strip().splitlines()):
        if line.startswith("{"):
            value: dict[str, Any] = json.loads(line)
            return value
    raise ValueError(f"no JSON line in {text[-300:]!r}")


def _log(msg: str) -> None:
    sys.stderr.write(f"[bench {time.strftime('%H:%M:%S')}] {msg}\n")
    sys.stderr.flush()


# -- measurements ------------------------------------------------------------------------------


def _build(cfg: Path, index: Path, processes: int | None) -> dict[str, Any]:
    shutil.rmtree(index, ignore_errors=True)
    # the archive beside it too: from empty means nothing kept from an earlier corpus either
    shutil.rmtree(index.with_name(index.name + "-archive"), ignore_errors=True)
    argv = [_bin("pipeline"), "run", "--once", "--config", str(cfg), "--json", "--quiet"]
    if processes:
        argv += ["--processes", str(processes)]
    cold = run_measured(argv)
    if cold.returncode not in (0, 1):
        raise SystemExit(f"pipeline run --once failed ({cold.returncode}): {cold.stderr[-800:]}")
    before = _tree(index)
    noop = run_measured(argv)
    # Again: the first rerun reads files the build has just written, and under relatime
    # (most Linux mounts) that first read updates each one's access time, which the kernel
    # bills to the reader as written bytes (4-8 KB at S; a `cat` of every file does the
    # same). The second has nothing of that: its kernel count is the rerun's own writes.
    again = run_measured(argv)
    after = _tree(index)
    changed = {p for p in set(before) | set(after) if before.get(p) != after.get(p)}
    report = _last_json(noop.stdout)
    return {
        "cold": {
            "seconds": cold.seconds,
            "user_s": cold.user_s,
            "sys_s": cold.sys_s,
            "peak_rss_kb": cold.peak_rss_kb,
            "report": _last_json(cold.stdout),
            "returncode": cold.returncode,
        },
        "noop": {
            "seconds": noop.seconds,
            "report_bytes_written": report.get("bytesWritten"),
            "kernel_write_bytes": again.write_bytes,
            "kernel_write_bytes_first": noop.write_bytes,
            "write_syscall_bytes": max(0, noop.wchar - len(noop.stdout.encode())),
            "index_files_changed": len(changed),
            "index_bytes_changed": sum(after.get(p, (0, 0))[0] for p in changed),
        },
    }


def _fts5_build(db: Path, roots: list[str]) -> dict[str, Any]:
    for p in db.parent.glob(db.name + "*"):
        p.unlink()
    m = run_measured(
        [sys.executable, "-m", "devtools.bench.fts5", "build", str(db), *roots], cwd=str(ROOT)
    )
    if m.returncode != 0:
        return {"error": m.stderr[-500:]}
    return {
        "seconds": m.seconds,
        "user_s": m.user_s,
        "sys_s": m.sys_s,
        "peak_rss_kb": m.peak_rss_kb,
        **_last_json(m.stdout),
    }


def _latency(
    ask: Any, queries: list[Query], key: str, reps: int, make: Any
) -> tuple[dict[str, Any], dict[str, list[dict[str, Any]]]]:
    """Per group: p50/p95/p99 of ``reps`` warm runs of each query, and what the last returned.

    Where a query knows the planted file and the system names files (FTS5), ``hit1`` records
    whether its top result is that file (informative: only our own hit@1 fails --check).
    """
    per: dict[str, list[float]] = {}
    seen: dict[str, list[dict[str, Any]]] = {}
    hits: dict[str, list[int]] = {}
    for q in queries:
        if getattr(q, key) is None:
            continue
        request = make(q)
        ask(request)  # warm this query's path once
        for _ in range(reps):
            r = ask(request)
            per.setdefault(q.group, []).append(r["ms"])
        seen.setdefault(q.group, []).append({"label": q.label, **_brief(r)})
        want = q.expect.get("file")
        if want and "top_file" in r:
            hits.setdefault(q.group, []).append(int(str(r["top_file"]).endswith("/" + want)))
    out: dict[str, Any] = {g: percentiles(v) for g, v in per.items()}
    for g, v in hits.items():
        out[g]["hit1"] = sum(v) / len(v)
    return out, seen


def _brief(r: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {k: r[k] for k in ("total", "complete", "n", "error") if k in r}
    if r.get("reasons"):
        out["reasons"] = r["reasons"]
    return out


def _rg(queries: list[Query], roots: list[str], reps: int) -> dict[str, Any]:
    per: dict[str, list[float]] = {}
    for q in queries:
        if q.rg is None:
            continue
        argv = ["rg", "--no-messages", *q.rg, *roots]
        subprocess.run(argv, capture_output=True)
        for _ in range(reps):
            t0 = time.perf_counter()
            subprocess.run(argv, capture_output=True)
            per.setdefault(q.group, []).append((time.perf_counter() - t0) * 1000)
    return {g: percentiles(v) for g, v in per.items()}


def _cli(cfg: Path, terms: list[str], *extra: str) -> dict[str, Any]:
    times = []
    for term in terms:
        argv = [_bin("query"), "recall", term, "--scope", "global", "--json", *extra]
        t0 = time.perf_counter()
        proc = subprocess.run([*argv, "--config", str(cfg)], capture_output=True, cwd="/")
        times.append((time.perf_counter() - t0) * 1000)
        if proc.returncode != 0:
            return {"error": proc.stderr.decode()[-300:]}
    return {"median_ms": statistics.median(times), "runs": len(times)}


class _Serve:
    """``query serve`` for the run; ``start`` returns None (with a note) where it is missing."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc

    @classmethod
    def start(cls, cfg: Path, index: Path, notes: list[str]) -> _Serve | None:
        probe = subprocess.run([_bin("query"), "serve", "--help"], capture_output=True)
        if probe.returncode != 0:
            notes.append("query serve is not available: warm latency measured in-process")
            return None
        argv = [_bin("query"), "serve", "--config", str(cfg), "--quiet"]
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        sock = index / "serve" / "query.sock"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                err = proc.stderr.read().decode() if proc.stderr else ""
                notes.append(f"query serve exited ({proc.returncode}): {err.strip()[:200]}")
                return None
            if sock.exists():
                with socket.socket(socket.AF_UNIX) as probe_sock:
                    try:
                        probe_sock.connect(str(sock))
                        return cls(proc)
                    except OSError:
                        pass
            time.sleep(0.02)
        proc.kill()
        proc.wait()
        notes.append("query serve did not listen within 60 s")
        return None

    def rss(self) -> dict[str, int]:
        return {"rss_kb": tree_rss_kb(self.proc.pid), "hwm_kb": rss_kb(self.proc.pid, "VmHWM")}

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _always_on(cfg: Path, settle_s: float = 3.0) -> tuple[subprocess.Popen[bytes] | None, str]:
    """Start ``pipeline run`` (always-on); None with a note when it exits within *settle_s*
    (0: returned at once, a failure shows as appends that are never found)."""
    argv = [_bin("pipeline"), "run", "--config", str(cfg), "--quiet"]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        if settle_s > 0:
            proc.wait(timeout=settle_s)
    except subprocess.TimeoutExpired:
        return proc, "pipeline run (always-on)"
    if proc.poll() is None:
        return proc, "pipeline run (always-on)"
    err = proc.stderr.read().decode() if proc.stderr else ""
    return None, f"always-on pipeline run unavailable (exit {proc.returncode}: {err.strip()[:160]})"


class _OnceLoop:
    """Fallback while the always-on mode is missing: ``pipeline run --once`` back to back."""

    def __init__(self, cfg: Path) -> None:
        self.argv = [_bin("pipeline"), "run", "--once", "--config", str(cfg), "--quiet"]
        self.runs: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            t0 = time.perf_counter()
            subprocess.run(self.argv, capture_output=True)
            self.runs.append((time.perf_counter() - t0) * 1000)

    def stop(self) -> dict[str, Any]:
        self._stop.set()
        self._thread.join()
        return {"once_runs": len(self.runs), "once_ms": percentiles(self.runs)}


def _fresh_sessions(corpus: Path, manifest: dict[str, Any], n: int = 20) -> list[list[str]]:
    mains = [s for s in manifest["sessions"] if not s.get("parent_file")]
    mains.sort(key=lambda s: s["mtime_ns"], reverse=True)
    return [[str(corpus / s["file"]), s["agent"]] for s in mains[:n]]


def _fresh_ours(
    cfg: Path, work: Path, sessions: list[list[str]], ns: argparse.Namespace, served: bool
) -> Any:
    # Catch up first: agentsview's own freshness run appended to the corpus.
    catch_up = [_bin("pipeline"), "run", "--once", "--config", str(cfg), "--quiet"]
    subprocess.run(catch_up, check=False)
    spec = work / "fresh-sessions.json"
    spec.write_text(json.dumps(sessions))
    # The first append is timed right after `pipeline run` starts and says it is ready (the
    # index answers from the catch-up already): what the start leaves cold lands on it, as it
    # does for a user; how long the start took is reported beside it (start_ms).
    spawned_at = time.time()
    proc, mode = _always_on(cfg, settle_s=0.0)
    loop = None if proc is not None else _OnceLoop(cfg)
    try:
        argv = [sys.executable, "-m", "devtools.bench.fresh", "--config", str(cfg)]
        argv += ["--sessions", str(spec), "--rate", str(ns.fresh_rate)]
        argv += ["--count", str(ns.fresh_count)] + (["--server"] if served else [])
        if proc is not None:
            argv += ["--first", str(proc.pid), "--spawned-at", repr(spawned_at)]
        done = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT)
        if done.returncode != 0:
            return {"error": done.stderr[-500:], "mode": mode}
        result = _last_json(done.stdout)
    finally:
        if proc is not None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        extra = loop.stop() if loop is not None else {}
    return {
        **result,
        "mode": mode if proc is not None else f"{mode}; fallback: run --once loop",
        **extra,
    }


def _status(cfg: Path) -> dict[str, Any]:
    argv = [_bin("pipeline"), "status", "--json", "--config", str(cfg)]
    out = subprocess.run(argv, capture_output=True, text=True, check=True)
    value: dict[str, Any] = json.loads(out.stdout)
    return value


def _du(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(s for s, _ in _tree(path).values()) if path.exists() else 0


# -- the run -----------------------------------------------------------------------------------


def run(ns: argparse.Namespace) -> dict[str, Any]:
    default = Path(tempfile.gettempdir()) / "sessiondex-bench" / ns.size
    work = (ns.work or default).resolve()
    work.mkdir(parents=True, exist_ok=True)
    # An earlier run's files go only after the timed builds (see devtools.bench.workdir).
    set_aside(work, ("corpus", "index", "index-archive", "fts5.db", "fts5.db-wal", "fts5.db-shm"))
    try:
        return _run(ns, work)
    finally:
        clear_aside(work)


def _run(ns: argparse.Namespace, work: Path) -> dict[str, Any]:
    sessions, mean_kb = SIZES[ns.size]
    sessions, mean_kb = ns.sessions or sessions, ns.mean_kb or mean_kb
    corpus, index, cfg = work / "corpus", work / "index", work / "config.toml"
    roots = [str(corpus / a) for a in ("pi", "claude", "codex")]
    res: dict[str, Any] = {"size": ns.size, "notes": []}
    notes: list[str] = res["notes"]
    # Other work on the machine skews every number: the load averages say how much there was.
    res["machine"] = {
        "cpus": os.cpu_count(),
        "python": sys.version.split()[0],
        "loadavg_start": [round(x, 2) for x in os.getloadavg()],
    }

    notes.append(compile_bytecode(sys.executable, ROOT))
    _log(f"generating {sessions} sessions x {mean_kb} KB into {corpus}")
    manifest, gen_s = ensure_corpus(corpus, sessions, mean_kb, ns.seed, sys.executable)
    canaries = plant_canaries(corpus, manifest, ns.seed)
    source_bytes = sum(
        os.path.getsize(os.path.join(b, n)) for r in roots for b, _, ns_ in os.walk(r) for n in ns_
    )
    res["corpus"] = {
        "sessions": manifest["totals"]["sessions"],
        "files": manifest["totals"]["files"],
        "bytes": source_bytes,
        "lines": manifest["totals"]["lines"],
        "planted": len(manifest["planted"]),
        "canaries": len(canaries),
        "generate_seconds": gen_s,
    }
    memory = {} if ns.hot_sessions is None else {"hotSessions": ns.hot_sessions}
    write_config(cfg, corpus, index, **memory)

    _log("pipeline run --once from empty, then the no-op rerun")
    res["build"] = _build(cfg, index, ns.processes)
    _log(f"archive: its size, and {ns.archive_pairs} builds without / with it, side by side")
    res["archive"] = archive_cost(
        _bin("pipeline"),
        cfg,
        work,
        index.with_name(index.name + "-archive"),
        source_bytes,
        pairs=ns.archive_pairs,
        processes=ns.processes,
    )
    _log("FTS5 baseline build")
    res["fts5_build"] = _fts5_build(work / "fts5.db", roots)
    if ns.base is not None:
        _log(f"{ns.base_pairs} builds of ours and of {ns.base}, side by side")
        res["vs_base"] = base_cost(
            Path(_bin("pipeline")),
            ns.base.resolve(),
            cfg,
            work,
            pairs=ns.base_pairs,
            processes=ns.processes,
        )
    status = _status(cfg)
    res["size_"] = {
        "index_bytes": _du(index),
        "source_bytes": status["sourceBytes"],
        "record_bytes": status["recordBytes"],
        "ratio": status["cacheSourceRatio"],
        "hot": status["hot"],
        "cold": status["cold"],
        "incomplete": status["incomplete"],
        "fts5_bytes": res["fts5_build"].get("bytes"),
    }
    res["redaction"] = false_positives(status)

    queries = build_groups(manifest, per_group=ns.per_group, seed=ns.seed)
    serve = _Serve.start(cfg, index, notes)
    try:
        _measure_queries(ns, res, work, corpus, cfg, roots, manifest, canaries, queries, serve)
    finally:
        if serve is not None:
            serve.stop()
    if ns.start_rounds > 0:
        from devtools.bench.first import while_starting

        _log(
            f"first append while query serve and pipeline run start: {ns.start_rounds} rounds, "
            "probed by a new query recall process each time"
        )
        res["fresh_start"] = while_starting(
            cfg,
            _fresh_sessions(corpus, manifest),
            ns.start_rounds,
            9,
            ns.fresh_rate,
            cli=True,
        )
    res["machine"]["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    res["targets"] = evaluate(res)
    return res


def _measure_queries(
    ns: argparse.Namespace,
    res: dict[str, Any],
    work: Path,
    corpus: Path,
    cfg: Path,
    roots: list[str],
    manifest: dict[str, Any],
    canaries: list[Any],
    queries: list[Query],
    serve: _Serve | None,
) -> None:
    notes: list[str] = res["notes"]
    _log(f"warm recall: {len(queries)} queries x {ns.reps} through our query process")
    argv = [sys.executable, "-m", "devtools.bench.ours_worker", "--config", str(cfg)]
    ours = Worker(argv + (["--server"] if serve else []))
    res["ours_mode"] = (
        "query serve over its Unix socket (client round trip)"
        if serve
        else "in-process query.engine.Engine in a long-lived process (query serve absent)"
    )
    try:
        lat, seen = _latency(
            ours.ask, queries, "ours", ns.reps, lambda q: {"op": "recall", "args": q.ours}
        )
        res["latency"] = {"ours": lat}
        res["results"] = {"ours": seen}
        _log("quality checks")
        res["quality"] = run_quality(
            ours.ask, corpus, manifest, canaries, sample=ns.quality_sample, seed=ns.seed
        )
        res["query_rss"] = serve.rss() if serve else ours.rss()
    finally:
        ours.close()
    if serve:
        _log("socket floor: framed round trips to an echo process")
        res["socket_floor"] = socket_floor()
        from devtools.bench.web import http_vs_socket

        _log("recall over HTTP (query ui, answering through query serve) beside the socket")
        sample = queries[:: max(1, len(queries) // 40)]
        res["http"] = http_vs_socket(cfg, _bin("query"), sample, 3, notes)

    _log("FTS5 warm queries")
    fts = Worker([sys.executable, "-m", "devtools.bench.fts5", "serve", str(work / "fts5.db")])
    try:
        lat, seen = _latency(fts.ask, queries, "fts5", ns.reps, lambda q: {"match": q.fts5})
        res["latency"]["fts5"] = lat
        res["results"]["fts5"] = seen
        res["fts5_rss_kb"] = fts.rss()["rss_kb"]
    finally:
        fts.close()

    if ns.no_rg or shutil.which("rg") is None:
        notes.append("rg skipped: " + ("--no-rg" if ns.no_rg else "ripgrep is not installed"))
    else:
        _log("rg -F brute-force scans")
        res["latency"]["rg"] = _rg(queries, roots, min(ns.reps, 3))

    _log("query recall CLI, new process each")
    planted_terms = [q.label for q in queries if q.group == "planted"]
    res["cli"] = _cli(cfg, planted_terms[: ns.cli_runs])
    res["cli"]["no_server"] = _cli(cfg, planted_terms[: ns.cli_runs], "--no-server")

    fresh_sessions = _fresh_sessions(corpus, manifest)
    if ns.peers:
        res["agentsview"] = _peers(ns, work, corpus, queries, fresh_sessions, notes)

    if ns.fresh_count > 0:
        _log(f"freshness: {ns.fresh_count} appends at {ns.fresh_rate}/s to 20 sessions")
        res["fresh"] = _fresh_ours(cfg, work, fresh_sessions, ns, serve is not None)


def _peers(
    ns: argparse.Namespace,
    work: Path,
    corpus: Path,
    queries: list[Query],
    fresh_sessions: list[list[str]],
    notes: list[str],
) -> dict[str, Any] | None:
    from devtools.bench.peer import install, netns_note
    from devtools.bench.peer import run as run_peer

    why = netns_note()
    if why is not None:
        notes.append(f"--peers skipped: {why}")
        return None
    _log("installing agentsview into its own venv")
    binary, version = install(work)
    if binary is None:
        notes.append(f"--peers skipped: {version}")
        return None
    _log(f"{version}: sync, search and freshness inside a loopback-only namespace")
    spec = {
        "queries": [
            {"group": q.group, "label": q.label, "agentsview": q.agentsview, "expect": q.expect}
            for q in queries
            if q.agentsview is not None
        ],
        "reps": ns.reps,
        "cli_runs": min(ns.cli_runs, 5),
        "fresh": {
            "sessions": fresh_sessions,
            "rate": ns.fresh_rate,
            "count": ns.fresh_count,
            "timeout": 30.0,
        }
        if ns.fresh_count
        else None,
    }
    out = run_peer(binary, work, corpus, spec, sys.executable)
    out["version"] = version
    if "error" in out:
        notes.append(f"agentsview failed: {out['error'][:300]}")
    return out


def main(argv: list[str] | None = None) -> int:
    ns = _parser().parse_args(argv)
    if ns.quality_only:
        work = (ns.work or Path(tempfile.gettempdir()) / "sessiondex-bench" / "quality").resolve()
        retrieval = run_retrieval(work, _log)
        sys.stdout.write(render_quality(retrieval) + "\n")
        sys.stdout.write(json.dumps({"retrieval": retrieval}, separators=(",", ":")) + "\n")
        return 0
    if ns.base is not None:
        base_pipeline(ns.base)  # fail before the corpus is made, not after the builds
    res = run(ns)
    sys.stdout.write(render(res))
    sys.stdout.write(json.dumps(res, separators=(",", ":"), default=str) + "\n")
    sys.stdout.flush()
    if ns.check and not all(q["ok"] for q in res["quality"].values()):
        return 1
    return 0
