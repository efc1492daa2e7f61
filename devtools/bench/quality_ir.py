"""Retrieval quality: our recall, SQLite FTS5 (bm25) and a LIKE scan on the same judged sets.

    ops/bench --quality-only [--work DIR]

The corpus is ``quality_corpus.assemble``'s (the public real sessions plus a small generated
corpus); the sets are ``quality_sets/known_item.json`` and ``natural.json`` (README.md there
says how they were made). Each query asks for the first 10 results of every system:

* **sessiondex**, ``scope: global``, default settings, built twice: ``hot`` with the default
  ``hotSessions`` and ``cold`` with ``hotSessions = 2`` (most sessions cold). An entry hit is
  relevant when its (session label, entry id) is judged relevant; a cold session candidate (the
  cold tier answers with sessions, whose entries a follow-up expands) when the session holds a
  judged entry.
* **fts5**: one row per JSONL line, every string of the line (``devtools.bench.fts5``), the query's
  terms OR-ed as quoted strings, ordered by ``bm25``. A row is relevant when its (file, line) is
  one of a judged entry's source lines.
* **like**: the same rows, ``body LIKE '%term%'`` per term, ordered by how many terms match,
  then file order (what a user writes in an afternoon without FTS).

Scores: MRR@10 (reciprocal rank of the first relevant result, 0 past 10), hit@1, hit@5.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from devtools.bench.corpus import write_config
from devtools.bench.fts5 import build as fts5_build
from devtools.bench.procs import run_measured
from devtools.bench.quality_corpus import assemble
from devtools.bench.workers import Worker
from store.tokens import unique_terms

__all__ = ["render_quality", "run_retrieval"]

SETS = Path(__file__).resolve().parent / "quality_sets"
K = 10

Ranked = Callable[[str], list[tuple[str, str, bool]]]  # -> (unit kind, key, is session)


def _load(name: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = json.loads((SETS / name).read_text())["items"]
    return items


def _score(ranks: Sequence[int | None]) -> dict[str, float]:
    n = len(ranks) or 1
    return {
        "n": len(ranks),
        "mrr10": sum(1 / r for r in ranks if r is not None and r <= K) / n,
        "hit1": sum(1 for r in ranks if r == 1) / n,
        "hit5": sum(1 for r in ranks if r is not None and r <= 5) / n,
    }


def _first_relevant(flags: Sequence[bool]) -> int | None:
    return next((i + 1 for i, ok in enumerate(flags[:K]) if ok), None)


def _ours(worker: Worker, item: dict[str, Any]) -> int | None:
    r = worker.ask({"op": "recall", "args": {"query": item["query"], "scope": "global"}})
    entries = {(j["session"], j["entry"]) for j in item["relevant"]}
    sessions = {j["session"] for j in item["relevant"]}
    flags = [
        (h["sessionId"], h["entryId"]) in entries
        if h["kind"] == "entry"
        else h["sessionId"] in sessions
        for h in r["hits"]
    ]
    return _first_relevant(flags)


def _lines(item: dict[str, Any]) -> set[tuple[str, int]]:
    return {(j["file"], n) for j in item["relevant"] for n in j["lines"]}


def _fts5(con: sqlite3.Connection, corpus: str, item: dict[str, Any]) -> int | None:
    terms = unique_terms(item["query"])
    match = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
    rows = con.execute(
        "SELECT file, line FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT ?", (match, K)
    ).fetchall()
    want = _lines(item)
    return _first_relevant([(f[len(corpus) + 1 :], n) in want for f, n in rows])


def _escape(term: str) -> str:
    return term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _like(con: sqlite3.Connection, corpus: str, item: dict[str, Any]) -> int | None:
    terms = unique_terms(item["query"])
    matched = " + ".join("(body LIKE ? ESCAPE '\\')" for _ in terms)
    args = ["%" + _escape(t) + "%" for t in terms]
    rows = con.execute(
        f"SELECT file, line, {matched} AS m FROM t WHERE m > 0 ORDER BY m DESC, rowid LIMIT ?",
        (*args, K),
    ).fetchall()
    want = _lines(item)
    return _first_relevant([(f[len(corpus) + 1 :], n) in want for f, n, _ in rows])


def _build_ours(work: Path, corpus: Path, name: str, **memory: object) -> Path:
    cfg = work / f"{name}.toml"
    write_config(cfg, corpus, work / f"index-{name}", **memory)
    bin_dir = Path(sys.executable).parent
    m = run_measured([str(bin_dir / "pipeline"), "run", "--once", "--quiet", "--config", str(cfg)])
    if m.returncode not in (0, 1):
        raise SystemExit(f"pipeline run --once failed ({m.returncode}): {m.stderr[-800:]}")
    return cfg


def run_retrieval(work: Path, log: Callable[[str], None]) -> dict[str, Any]:
    """Every system on every set; one result row per (set, system)."""
    work.mkdir(parents=True, exist_ok=True)
    log("retrieval quality: corpus")
    corpus = assemble(work)
    sets = {"known-item": _load("known_item.json"), "natural": _load("natural.json")}
    sets["known-item real"] = [i for i in sets["known-item"] if "/real/" in i["target"]]
    ranks: dict[tuple[str, str], list[int | None]] = {}
    for system, memory in (("sessiondex hot", {}), ("sessiondex cold", {"hotSessions": 2})):
        log(f"retrieval quality: {system}")
        cfg = _build_ours(work, corpus, system.split()[1], **memory)
        worker = Worker([sys.executable, "-m", "devtools.bench.ours_worker", "--config", str(cfg)])
        try:
            for name, items in sets.items():
                ranks[(name, system)] = [_ours(worker, i) for i in items]
        finally:
            worker.close()
    log("retrieval quality: fts5 and like")
    db = work / "fts5.db"
    fts5_build(str(db), [str(corpus / a) for a in ("pi", "claude", "codex")])
    con = sqlite3.connect(str(db))
    try:
        for name, items in sets.items():
            ranks[(name, "fts5 bm25")] = [_fts5(con, str(corpus), i) for i in items]
            ranks[(name, "like")] = [_like(con, str(corpus), i) for i in items]
    finally:
        con.close()
    order = list(sets)
    ranked = sorted(ranks.items(), key=lambda kv: (order.index(kv[0][0]), kv[0][1]))
    rows = [{"set": s, "system": system, **_score(r)} for (s, system), r in ranked]
    return {"rows": rows, "misses": _misses(sets, ranks)}


def _misses(
    sets: dict[str, list[dict[str, Any]]], ranks: dict[tuple[str, str], list[int | None]]
) -> dict[str, list[str]]:
    """Per sessiondex system, the queries it ranks worse than FTS5 (for reading, not scoring)."""
    out: dict[str, list[str]] = {}
    for (name, system), got in ranks.items():
        if not system.startswith("sessiondex") or name == "known-item real":
            continue
        base = ranks[(name, "fts5 bm25")]
        worse = [
            f"{i['query']!r}: {a} vs fts5 {b}"
            for i, a, b in zip(sets[name], got, base, strict=True)
            if (a or 99) > (b or 99)
        ]
        out[f"{name} / {system}"] = worse
    return out


def render_quality(res: dict[str, Any]) -> str:
    lines = [f"{'set':<16} {'system':<16} {'n':>4} {'MRR@10':>7} {'hit@1':>6} {'hit@5':>6}"]
    for r in res["rows"]:
        lines.append(
            f"{r['set']:<16} {r['system']:<16} {r['n']:>4} {r['mrr10']:>7.3f}"
            f" {r['hit1']:>6.3f} {r['hit5']:>6.3f}"
        )
    return "\n".join(lines)
