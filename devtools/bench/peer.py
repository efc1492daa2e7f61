"""agentsview, a real peer: installed into its own venv, run offline on the same corpus.

agentsview tries to reach the internet when it starts, so it and every client that talks to
it run inside a network namespace holding only loopback (``unshare --net``): nothing leaves
the machine. ``run`` does the set-up outside and starts ``python -m devtools.bench.peer inner``
inside the namespace, which brings ``lo`` up, then measures: a full ``sync`` (time, peak RSS),
a no-op re-sync, ranked search through ``serve`` on 127.0.0.1 per query group, the
``session search --server`` CLI, the server's RSS and append-to-searchable latency.
"""

from __future__ import annotations

import fcntl
import http.client
import json
import os
import shutil
import socket
import statistics
import struct
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path
from typing import Any

from devtools import ROOT
from devtools.bench.fresh import measure
from devtools.bench.procs import percentiles, run_measured, tree_rss_kb

__all__ = ["install", "netns_note", "run"]

_SIOCGIFFLAGS, _SIOCSIFFLAGS, _IFF_UP = 0x8913, 0x8914, 0x1


def install(work: Path) -> tuple[Path | None, str]:
    """The agentsview binary in ``work/agentsview-venv`` (installed on first use) or a note."""
    venv = work / "agentsview-venv"
    found = sorted(venv.glob("lib/python*/site-packages/agentsview/bin/agentsview"))
    if not found:
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        pip = subprocess.run(
            [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "agentsview"],
            capture_output=True,
            text=True,
        )
        if pip.returncode != 0:
            return None, f"pip install agentsview failed: {pip.stderr.strip()[-300:]}"
        found = sorted(venv.glob("lib/python*/site-packages/agentsview/bin/agentsview"))
    if not found:
        return None, "the agentsview package holds no binary for this platform"
    version = subprocess.run([str(found[0]), "--version"], capture_output=True, text=True)
    return found[0], (version.stdout or version.stderr).strip().splitlines()[0]


def netns_note() -> str | None:
    """None when ``unshare --net`` works here, else why the peer must be skipped."""
    if shutil.which("unshare") is None:
        return "unshare is not installed"
    probe = subprocess.run(["unshare", "--net", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        return f"unshare --net is not permitted here ({probe.stderr.strip()[:120]})"
    return None


def run(
    binary: Path, work: Path, corpus: Path, spec: dict[str, Any], python: str
) -> dict[str, Any]:
    """Run the measurements inside a loopback-only namespace; returns their JSON."""
    home, data = work / "agentsview-home", work / "agentsview-data"
    for d in (home, data):
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir(parents=True)
    spec = {**spec, "binary": str(binary), "home": str(home), "data": str(data)}
    spec["roots"] = {a: str(corpus / a) for a in ("pi", "claude", "codex")}
    spec_path = work / "agentsview-spec.json"
    spec_path.write_text(json.dumps(spec))
    proc = subprocess.run(
        ["unshare", "--net", python, "-m", "devtools.bench.peer", "inner", str(spec_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        return {"error": f"exit {proc.returncode}: {proc.stderr.strip()[-800:]}"}
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


# -- inside the namespace --------------------------------------------------------------------


def _loopback_up() -> None:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        req = struct.pack("16sH", b"lo", 0)
        flags = struct.unpack("16sH", fcntl.ioctl(s, _SIOCGIFFLAGS, req))[1]
        fcntl.ioctl(s, _SIOCSIFFLAGS, struct.pack("16sH", b"lo", flags | _IFF_UP))
    finally:
        s.close()


def _offline() -> bool:
    """Only loopback exists here and no route leads anywhere (checked without sending)."""
    names = [ln.split(":")[0].strip() for ln in Path("/proc/net/dev").read_text().splitlines()[2:]]
    routes = Path("/proc/net/route").read_text().splitlines()[1:]
    return names == ["lo"] and not routes


class _Http:
    def __init__(self, port: int) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

    def get(self, path: str, params: dict[str, str]) -> tuple[float, dict[str, Any]]:
        url = path + "?" + urllib.parse.urlencode(params)
        started = time.perf_counter()
        self.conn.request("GET", url)
        resp = self.conn.getresponse()
        body = resp.read()
        ms = (time.perf_counter() - started) * 1000
        try:
            value = json.loads(body)
        except ValueError:
            value = {"error": body[:200].decode(errors="replace")}
        if resp.status != 200 and "error" not in value:
            value["error"] = f"HTTP {resp.status}"
        return ms, value


def _results(value: dict[str, Any]) -> list[dict[str, Any]]:
    found = value.get("results")
    if found is None:
        found = value.get("matches")
    return list(found or [])


def _inner(spec: dict[str, Any]) -> dict[str, Any]:
    _loopback_up()
    if not _offline():
        raise SystemExit("refusing to run agentsview: the namespace reaches beyond loopback")
    binary = spec["binary"]
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": spec["home"],
        "AGENTSVIEW_DATA_DIR": spec["data"],
        "CLAUDE_PROJECTS_DIR": spec["roots"]["claude"],
        "CODEX_SESSIONS_DIR": spec["roots"]["codex"],
        "PI_DIR": spec["roots"]["pi"],
        "AGENTSVIEW_NO_DAEMON": "1",
    }
    out: dict[str, Any] = {}
    sync = run_measured([binary, "sync"], env=env)
    out["sync"] = {
        "seconds": sync.seconds,
        "user_s": sync.user_s,
        "sys_s": sync.sys_s,
        "peak_rss_kb": sync.peak_rss_kb,
        "returncode": sync.returncode,
        "says": [ln for ln in sync.stdout.splitlines() if "ync complete" in ln or "Database" in ln],
    }
    noop = run_measured([binary, "sync"], env=env)
    out["noop"] = {
        "seconds": noop.seconds,
        "write_bytes": noop.write_bytes,
        "wchar": noop.wchar,
        "says": [ln for ln in noop.stdout.splitlines() if "ync complete" in ln],
    }
    out["db_bytes"] = sum(p.stat().st_size for p in Path(spec["data"]).glob("sessions.db*"))
    log = Path(spec["data"]).parent / "agentsview-serve.log"
    with open(log, "wb") as sink:
        server = subprocess.Popen(
            [
                binary,
                "serve",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--no-browser",
                "--no-update-check",
            ],
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    try:
        port = 0
        deadline = time.time() + 300
        while time.time() < deadline and not port:
            for line in log.read_text(errors="replace").splitlines():
                if "listening at http://127.0.0.1:" in line:
                    port = int(line.rsplit(":", 1)[1].split()[0].strip("/"))
            if server.poll() is not None:
                raise SystemExit(f"agentsview serve exited: {log.read_text()[-500:]}")
            time.sleep(0.05)
        if not port:
            raise SystemExit("agentsview serve did not start in 300 s")
        client = _Http(port)
        per_group: dict[str, list[float]] = {}
        hit1: dict[str, list[int]] = {}
        queries: dict[str, list[Any]] = {}
        for q in spec["queries"]:
            path, params = q["agentsview"]
            client.get(path, params)  # warm-up
            for _ in range(spec["reps"]):
                ms, value = client.get(path, params)
                per_group.setdefault(q["group"], []).append(ms)
            found = _results(value)
            queries.setdefault(q["group"], []).append(
                {"label": q["label"], "n": len(found), "error": value.get("error")}
            )
            want = q.get("expect", {}).get("session")
            if want:
                top = found[0].get("session_id", "") if found else ""
                ok = bool(top) and want.split(":", 1)[1] in top
                hit1.setdefault(q["group"], []).append(int(ok))
        out["latency_ms"] = {g: percentiles(v) for g, v in per_group.items()}
        out["hit1"] = {g: sum(v) / len(v) for g, v in hit1.items() if v}
        out["query_results"] = queries
        cli = []
        url = f"http://127.0.0.1:{port}"
        for q in spec["queries"][: spec["cli_runs"]]:
            t0 = time.perf_counter()
            subprocess.run(
                [binary, "session", "search", q["label"], "--json", "--server", url],
                env=env,
                capture_output=True,
            )
            cli.append((time.perf_counter() - t0) * 1000)
        out["cli_ms_median"] = statistics.median(cli) if cli else None
        out["server_rss_kb"] = tree_rss_kb(server.pid)

        def search(term: str) -> bool:
            _, value = client.get("/api/v1/search", {"q": term, "limit": "10"})
            return bool(_results(value))

        fresh = spec.get("fresh")
        if fresh:
            out["fresh"] = measure(
                search,
                [tuple(s) for s in fresh["sessions"]],
                rate=fresh["rate"],
                count=fresh["count"],
                timeout=fresh["timeout"],
            )
        out["server_rss_after_kb"] = tree_rss_kb(server.pid)
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    return out


if __name__ == "__main__":
    if sys.argv[1] == "inner":
        result = _inner(json.loads(Path(sys.argv[2]).read_text()))
        sys.stdout.write(json.dumps(result) + "\n")
