"""Recall over HTTP (``query serve --http``) beside recall over the query socket.

The bench starts ``query serve`` with ``--http 0``, so one server, one engine, answers both.
From this one client process each query is asked over the Unix socket (``Backend``, as the CLI
does) and over HTTP (a kept-alive ``POST /api/recall`` with the start's token, as the web page
and other tools do), interleaved, so both see the same warm caches and the same machine load.
The difference is what HTTP costs: uvicorn, starlette, the worker thread hop, the JSON body.
"""

from __future__ import annotations

import http.client
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import orjson

from bench_lib.groups import Query
from bench_lib.procs import percentiles

__all__ = ["http_vs_socket"]


def http_vs_socket(cfg: Path, url: str, queries: list[Query], reps: int) -> dict[str, Any]:
    """p50 / p95 / p99 in ms of the same recalls over the socket and over HTTP."""
    from query.transport import Backend
    from store.config import load_config

    parts = urlsplit(url)
    token = parts.query.removeprefix("token=")
    assert parts.hostname is not None and parts.port is not None
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=120)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}

    def over_http(args: dict[str, Any]) -> dict[str, Any]:
        conn.request(
            "POST", "/api/recall", body=orjson.dumps({**args, "cwd": "/"}), headers=headers
        )
        r = conn.getresponse()
        body = r.read()
        if r.status != 200:
            raise RuntimeError(f"HTTP {r.status}: {body[:200]!r}")
        result: dict[str, Any] = orjson.loads(body)
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
    return {"socket": percentiles(sock_ms), "http": percentiles(http_ms), "mismatches": mismatches}
