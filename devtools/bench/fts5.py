"""The alternative a user would write in an afternoon: one SQLite FTS5 table of all text.

``build DB ROOT...``: every line of every ``*.jsonl`` under the roots is parsed with orjson,
every string in it joined with newlines, and inserted as one row (file, line, body) in one
process. ``serve DB``: JSON lines on stdin, ``{"match": ...}`` answered with the top 10 by
``bm25``, each with a snippet, encoded as JSON (as a server would return them), and the time
that took (``ms``), measured in-process like ours.
"""

from __future__ import annotations

import os
import sqlite3
import sys
import time
from collections.abc import Iterator
from typing import Any

import orjson

_BATCH = 2000
_QUERY = (
    "SELECT file, line, snippet(t, 2, '', '', '…', 48), bm25(t) FROM t WHERE t MATCH ?"
    " ORDER BY bm25(t) LIMIT 10"
)


def _strings(value: Any, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, dict):
        for v in value.values():
            _strings(v, out)
    elif isinstance(value, list):
        for v in value:
            _strings(v, out)


def _rows(roots: list[str]) -> Iterator[tuple[str, int, str]]:
    for root in roots:
        for folder, _, names in os.walk(root):
            for name in sorted(names):
                if not name.endswith(".jsonl"):
                    continue
                path = os.path.join(folder, name)
                with open(path, "rb") as f:
                    for number, line in enumerate(f, 1):
                        try:
                            value = orjson.loads(line)
                        except orjson.JSONDecodeError:
                            continue
                        parts: list[str] = []
                        _strings(value, parts)
                        yield path, number, "\n".join(parts)


def build(db: str, roots: list[str]) -> dict[str, Any]:
    started = time.perf_counter()
    if os.path.exists(db):
        os.unlink(db)
    con = sqlite3.connect(db)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA synchronous=NORMAL")
    con.execute("CREATE VIRTUAL TABLE t USING fts5(file UNINDEXED, line UNINDEXED, body)")
    rows = 0
    batch: list[tuple[str, int, str]] = []
    with con:
        for row in _rows(roots):
            batch.append(row)
            if len(batch) >= _BATCH:
                con.executemany("INSERT INTO t(file, line, body) VALUES (?, ?, ?)", batch)
                rows += len(batch)
                batch.clear()
        con.executemany("INSERT INTO t(file, line, body) VALUES (?, ?, ?)", batch)
        rows += len(batch)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    return {"rows": rows, "seconds": time.perf_counter() - started, "bytes": os.path.getsize(db)}


def serve(db: str) -> None:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        req = orjson.loads(line)
        if req.get("op") == "quit":
            break
        started = time.perf_counter()
        try:
            top = con.execute(_QUERY, (req["match"],)).fetchall()
            error = None
        except sqlite3.Error as exc:
            top, error = [], str(exc)
        rows = [{"file": f, "line": n, "snippet": s, "score": b} for f, n, s, b in top]
        encoded = orjson.dumps(rows)
        ms = (time.perf_counter() - started) * 1000
        reply = {
            "ms": ms,
            "n": len(top),
            "bytes": len(encoded),
            "error": error,
            "top_file": top[0][0] if top else None,
        }
        out.write(orjson.dumps(reply) + b"\n")
        out.flush()


if __name__ == "__main__":
    if sys.argv[1] == "build":
        sys.stdout.write(orjson.dumps(build(sys.argv[2], sys.argv[3:])).decode() + "\n")
    else:
        serve(sys.argv[2])
