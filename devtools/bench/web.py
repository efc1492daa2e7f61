"""Recall through the web UI's HTTP API beside recall over the query socket.

A ``query ui --port 0`` process is started for this measurement only (so ``query serve``'s
RSS and the other numbers stay its own); it answers through the running ``query serve``, as
``query ui`` does whenever a server runs. From this one client process each query is asked
over the Unix socket (``Backend``, as the CLI does) and as ``POST /api/recall`` on one
kept-alive HTTP connection with the start's token (as the web page and other tools do),
interleaved, so both see the same warm server and the same machine load. The difference is
what the web path costs: HTTP (uvicorn, starlette), the UI process, and its socket hop.
"""

from __future__ import annotations

import http.client
import selectors
import signal
import subprocess
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import orjson

from devtools.bench.groups import Query
from devtools.bench.procs import percentiles

__all__ = ["http_vs_socket"]


def _start(query: str, cfg: Path) -> tuple[subprocess.Popen[bytes], str | None]:
    proc = subprocess.Popen(
        [query, "ui", "--config", str(cfg), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdout is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    line = proc.stdout.readline().decode().split() if sel.select(timeout=60) else []
    sel.close()
    return proc, (line[-1] if line and line[-1].startswith("http://") else None)


def http_vs_socket(
    cfg: Path, query: str, queries: list[Query], reps: int, notes: list[str]
) -> dict[str, Any]:
    """p50 / p95 / p99 in ms of the same recalls over the socket and over HTTP."""
    from query.transport import Backend
    from store.config import load_config

    proc, url = _start(query, cfg)
    try:
        if url is None:
            notes.append("query ui did not print its URL: recall over HTTP not measured")
            return {}
        parts = urlsplit(url)
        token = parts.query.removeprefix("token=")
        assert parts.hostname is not None and parts.port is not None
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=120)
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}

        def over_http(args: dict[str, Any]) -> dict[str, Any]:
            body = orjson.dumps({**args, "cwd": "/"})
            conn.request("POST", "/api/recall", body=body, headers=headers)
            r = conn.getresponse()
            data = r.read()
            if r.status != 200:
                raise RuntimeError(f"HTTP {r.status}: {data[:200]!r}")
            result: dict[str, Any] = orjson.loads(data)
            return result

        sock_ms: list[float] = []
        http_ms: list[float] = []
        mismatches = 0
        with Backend(load_config(cfg), server="require") as backend:
            for q in queries:
                a = backend.recall(q.ours, cwd="/")  # warm this query's path once
                b = over_http(q.ours)
                mismatches += int(a.get("total") != b.get("total"))
                for _ in range(reps):
                    t0 = time.perf_counter()
                    backend.recall(q.ours, cwd="/")
                    t1 = time.perf_counter()
                    over_http(q.ours)
                    t2 = time.perf_counter()
                    sock_ms.append((t1 - t0) * 1000)
                    http_ms.append((t2 - t1) * 1000)
        conn.close()
        return {
            "socket": percentiles(sock_ms),
            "http": percentiles(http_ms),
            "mismatches": mismatches,
        }
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
