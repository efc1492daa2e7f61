"""A long-lived query process the bench drives over stdin/stdout (JSON lines).

With ``--server`` it asks a running ``query serve`` over its Unix socket
(``query.transport.Backend`` with ``server="require"``, as the CLI and ``query.client`` do), so
``ms`` covers the whole round trip: framing, the server's work, decoding. Without it, it runs
an in-process ``query.engine.Engine`` and ``ms`` covers the request plus encoding its JSON.
Either way ``ms`` is measured here, so the pipe to the bench does not count.

    {"op": "recall", "args": {...}}      -> {"ms", "total", "complete", "reasons", "hits"}
    {"op": "recall_all", "args": {...}}  -> every page followed: per-session entry counts
    {"op": "rss"}                        -> this process tree's RSS and peak RSS (KiB)
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

import orjson

from devtools.bench.procs import rss_kb, tree_pids, tree_rss_kb


class _EngineBackend:
    def __init__(self, config_path: str) -> None:
        from query.engine import Engine
        from store.config import load_config

        self.engine = Engine(load_config(config_path))

    def recall(self, args: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = self.engine.recall(args, cwd="/")
        return result

    def call(self, token: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = self.engine.call(token, cwd="/")
        return result


class _ServerBackend:
    def __init__(self, config_path: str) -> None:
        from query.transport import Backend
        from store.config import load_config

        self.backend = Backend(load_config(config_path), server="require")

    def recall(self, args: dict[str, Any]) -> dict[str, Any]:
        return self.backend.recall(args, cwd="/")

    def call(self, token: dict[str, Any]) -> dict[str, Any]:
        return self.backend.call(token, cwd="/")


def _summary(result: dict[str, Any]) -> dict[str, Any]:
    cov = result.get("coverage") or {}
    return {
        "total": result.get("total", 0),
        "complete": bool(cov.get("complete")),
        "reasons": cov.get("reasons", []),
        "error": result.get("error"),
        "hits": [
            {
                "kind": h.get("kind"),
                "sessionId": h.get("sessionId"),
                "entryId": h.get("entryId"),
                "tier": h.get("tier"),
                "snippet": (h.get("snippet") or "")[:400],
            }
            for h in result.get("hits", [])[:10]
        ],
    }


def _recall_all(backend: Any, args: dict[str, Any]) -> dict[str, Any]:
    """Every page; entries per session (a cold candidate counts its structural entries)."""
    result = backend.recall(args)
    counts: dict[str, int] = {}
    kinds = {"entry": 0, "session": 0}
    total, pages = result.get("total", 0), 1
    while True:
        for h in result.get("hits", []):
            kinds[h["kind"]] = kinds.get(h["kind"], 0) + 1
            n = 1 if h["kind"] == "entry" else int(h.get("matchedStructuralEntries") or 0)
            counts[h["sessionId"]] = counts.get(h["sessionId"], 0) + n
        nxt = result.get("next")
        if not nxt:
            break
        result = backend.call(nxt)
        pages += 1
    cov = result.get("coverage") or {}
    return {
        "total": total,
        "pages": pages,
        "kinds": kinds,
        "counts": counts,
        "complete": bool(cov.get("complete")),
        "reasons": cov.get("reasons", []),
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", required=True)
    parser.add_argument("--server", action="store_true", help="ask the running query serve")
    ns = parser.parse_args()
    backend: Any = _ServerBackend(ns.config) if ns.server else _EngineBackend(ns.config)
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        req = orjson.loads(line)
        op = req["op"]
        if op == "quit":
            break
        if op == "rss":
            reply: dict[str, Any] = {
                "rss_kb": tree_rss_kb(_self()),
                "own_rss_kb": rss_kb(_self()),
                "own_hwm_kb": rss_kb(_self(), "VmHWM"),
                "processes": len(tree_pids(_self())),
            }
        elif op == "recall":
            started = time.perf_counter()
            try:
                result = backend.recall(req["args"])
                encoded = b"" if ns.server else orjson.dumps(result)
            except Exception as exc:  # a failed request is a measurement, not a crash
                result, encoded = {"error": {"code": type(exc).__name__, "message": str(exc)}}, b""
            ms = (time.perf_counter() - started) * 1000
            reply = {"ms": ms, "bytes": len(encoded), **_summary(result)}
        elif op == "recall_all":
            reply = _recall_all(backend, req["args"])
        else:
            reply = {"error": f"unknown op {op}"}
        out.write(orjson.dumps(reply) + b"\n")
        out.flush()
    return 0


def _self() -> int:
    import os

    return os.getpid()


if __name__ == "__main__":
    sys.exit(main())
