"""`pipeline status`: how complete and healthy the published index is, right now.

It compares CURRENT's manifest with a fresh look at the roots: a session whose stamp moved
since it was indexed is *stale*, a file the manifest does not know is *new*, and a session
whose records carry coverage reasons is *incomplete* (named, with its reasons).

The ``pipeline`` section is the always-on pipeline's health, read from disk so it works
whether or not `pipeline run` is running: the journal head and every stage's checkpoint, the
lag (events journaled but not yet published, and how long the oldest has waited), and what
the supervisor last wrote about its processes (state, restarts, heartbeat age, last error).
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.discovery import discover
from pipeline.resume import PUBLISH_STAGE
from store.checkpoints import CheckpointStore
from store.config import Config
from store.errors import SnapshotMissing, StoreError
from store.journal import FileJournal
from store.layout import IndexLayout
from store.reader import open_snapshot
from store.records import SessionEntries

__all__ = ["Status", "collect_status", "render_status"]


@dataclass(slots=True)
class Status:
    index_dir: str
    generation: int | None = None
    published_ns: int | None = None
    eligible: int = 0
    indexed: int = 0
    stale: int = 0
    new: int = 0
    skipped: int = 0
    incomplete: int = 0
    hot: int = 0
    cold: int = 0
    source_bytes: dict[str, int] = field(default_factory=lambda: {"hot": 0, "cold": 0})
    record_bytes: dict[str, int] = field(default_factory=lambda: {"hot": 0, "cold": 0})
    entries_bytes: int = 0
    lexicon_bytes: int = 0
    index_bytes: int = 0
    reasons: list[str] = field(default_factory=list)
    incomplete_sessions: list[dict[str, Any]] = field(default_factory=list)
    stale_sessions: list[str] = field(default_factory=list)
    new_sessions: list[str] = field(default_factory=list)
    skipped_sessions: list[dict[str, str]] = field(default_factory=list)
    agents: dict[str, int] = field(default_factory=dict)
    pipeline: dict[str, Any] = field(default_factory=dict)
    redactions: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        def ratio(a: int, b: int) -> float | None:
            return round(a / b, 6) if b else None

        src = self.source_bytes
        rec = self.record_bytes
        return {
            "indexDir": self.index_dir,
            "generation": self.generation,
            "publishedAt": self.published_ns // 1_000_000 if self.published_ns else None,
            "eligible": self.eligible,
            "indexed": self.indexed,
            "stale": self.stale,
            "new": self.new,
            "skipped": self.skipped,
            "incomplete": self.incomplete,
            "hot": self.hot,
            "cold": self.cold,
            "agents": dict(sorted(self.agents.items())),
            "redactions": self.redactions,
            "sourceBytes": {**src, "total": src["hot"] + src["cold"]},
            "recordBytes": {**rec, "entries": self.entries_bytes, "lexicon": self.lexicon_bytes},
            "indexBytes": self.index_bytes,
            "cacheSourceRatio": {
                "hot": ratio(rec["hot"], src["hot"]),
                "cold": ratio(rec["cold"], src["cold"]),
                # the cold lexicon holds the cold vocabularies a second time, merged
                "coldWithLexicon": ratio(rec["cold"] + self.lexicon_bytes, src["cold"]),
                "index": ratio(self.index_bytes, src["hot"] + src["cold"]),
            },
            "reasons": self.reasons,
            "incompleteSessions": self.incomplete_sessions,
            "staleSessions": self.stale_sessions,
            "newSessions": self.new_sessions,
            "skippedSessions": self.skipped_sessions,
            "pipeline": self.pipeline,
        }


def _tree_bytes(root: Path) -> int:
    total = 0
    for dirpath, _, files in os.walk(root):
        for name in files:
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_size
            except FileNotFoundError:
                continue
    return total


def _alive(pid: object) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def collect_pipeline(config: Config, now_ns: int | None = None) -> dict[str, Any]:
    """The always-on pipeline's journal, positions, lag and processes (never writes)."""
    from pipeline.supervisor import read_run_state  # keeps `status` light when unused

    now_ns = time.time_ns() if now_ns is None else now_ns
    layout = IndexLayout(config.index_dir)
    checkpoints = CheckpointStore(layout.checkpoints).all()
    journal = FileJournal(layout.journal)
    try:
        stats = journal.statistics()
        published = checkpoints.get(PUBLISH_STAGE)
        after = published.position if published is not None else stats.first - 1
        pending = journal.read(after, limit=1) if stats.head > after else []
    except StoreError:
        stats, after, pending = None, -1, []
    finally:
        journal.close()
    positions: dict[str, int] = {"watch": stats.head if stats else -1}
    positions.update({name: c.position for name, c in sorted(checkpoints.items())})
    oldest = (now_ns - pending[0].observed_ns) / 1e9 if pending else None
    run = read_run_state(config.index_dir) or {}
    running = run.get("state") in ("running", "stopping") and _alive(run.get("pid"))
    workers = []
    for child in run.get("children", []):
        beat = child.get("heartbeatAt")
        workers.append(
            {
                "name": child.get("name"),
                "role": child.get("role"),
                "pid": child.get("pid"),
                "state": child.get("state") if running else "stopped",
                "restarts": child.get("restarts", 0),
                "heartbeatAgeSeconds": round(now_ns / 1e9 - beat / 1e3, 3)
                if running and isinstance(beat, int | float)
                else None,
                "lastError": child.get("lastError"),
                "stats": child.get("stats", {}),
            }
        )
    return {
        "running": running,
        "pid": run.get("pid") if running else None,
        "state": run.get("state", "never run") if running else "stopped",
        "journal": {
            "first": stats.first if stats else None,
            "head": stats.head if stats else None,
            "segments": stats.segments if stats else 0,
            "bytes": stats.bytes if stats else 0,
        },
        "positions": positions,
        "lag": {
            "events": max(0, stats.head - after) if stats else 0,
            "oldestPendingSeconds": round(oldest, 3) if oldest is not None else None,
        },
        "workers": workers,
        "restarts": sum(w["restarts"] for w in workers),
        # sessions that killed an index worker every time, skipped until their file changes
        "quarantined": run.get("quarantined", []) if running else [],
    }


def collect_status(config: Config) -> Status:
    """Read CURRENT and the roots; never writes."""
    status = Status(index_dir=str(config.index_dir))
    status.pipeline = collect_pipeline(config)
    candidates, problems = discover(config.roots)
    live = {c.path: c for c in candidates}
    status.eligible = len(candidates) + len(problems)
    try:
        snapshot = open_snapshot(config.index_dir)
    except SnapshotMissing:
        status.new = len(candidates)
        status.new_sessions = sorted(live)
        return status
    manifest = snapshot.manifest
    status.generation = manifest.generation
    status.published_ns = manifest.created_ns
    status.pipeline["lastGenerationAt"] = manifest.created_ns // 1_000_000
    status.reasons = list(manifest.reasons)
    status.index_bytes = _tree_bytes(config.index_dir)
    for name in manifest.lexicon:
        with contextlib.suppress(OSError):
            status.lexicon_bytes += snapshot.layout.record_path(name).stat().st_size
    known: set[str] = set()
    for s in manifest.sessions:
        known.add(s.path)
        c = live.get(s.path)
        if c is None or c.stamp != s.stamp:
            status.stale += 1
            status.stale_sessions.append(s.path)
        else:
            status.indexed += 1
        status.agents[s.agent] = status.agents.get(s.agent, 0) + 1
        if s.tier == "hot":
            status.hot += 1
        else:
            status.cold += 1
        status.source_bytes[s.tier] += s.size
        status.record_bytes[s.tier] += s.index_bytes
        status.entries_bytes += s.entries_bytes
        reasons = sorted({r for v in s.views for r in v.reasons if v.branches == "active"})
        if reasons:
            status.incomplete += 1
            status.incomplete_sessions.append(
                {
                    "path": s.path,
                    "agent": s.agent,
                    "sessionId": f"{s.agent}:{s.session_id}",
                    "tier": s.tier,
                    "reasons": reasons,
                }
            )
    for sk in manifest.skipped:
        known.add(sk.path)
        status.skipped += 1
        status.skipped_sessions.append({"path": sk.path, "agent": sk.agent, "reason": sk.reason})
    status.new_sessions = sorted(p for p in live if p not in known)
    status.new = len(status.new_sessions)
    status.redactions = _redactions(snapshot, manifest.sessions)
    return status


def _redactions(snapshot: Any, sessions: Any) -> dict[str, int]:
    """Credentials redacted at index time, by kind, over every session's active entries
    (base record, then each delta in order, cut where a delta replaces entries)."""
    counts: dict[str, int] = {}
    for s in sessions:
        entries: list[Any] = []
        try:
            for name in (s.entries_record, *s.entries_deltas):
                view = snapshot.load(name, SessionEntries).view("active")
                if view.replaces:
                    del entries[len(entries) - view.replaces :]
                entries.extend(view.entries)
        except StoreError:
            continue
        for e in entries:
            for kind, _ in e.redactions:
                counts[kind] = counts.get(kind, 0) + 1
    return dict(sorted(counts.items()))


def _render_pipeline(p: dict[str, Any]) -> list[str]:
    if not p:
        return []
    lag = p["lag"]
    oldest = lag["oldestPendingSeconds"]
    positions = ", ".join(f"{k} {v}" for k, v in p["positions"].items())
    lines = [
        f"pipeline    {'running (pid ' + str(p['pid']) + ')' if p['running'] else 'not running'}"
        f"; lag {lag['events']} events"
        + (f", oldest waiting {oldest:.1f}s" if oldest is not None else "")
        + f"; {p['restarts']} restarts",
        f"journal     head {p['journal']['head']}; positions {positions}",
    ]
    for w in p["workers"]:
        age = w["heartbeatAgeSeconds"]
        line = (
            f"worker      {w['name']}: {w['state']}"
            + (f", pid {w['pid']}" if p["running"] else "")
            + (f", heartbeat {age:.1f}s ago" if age is not None else "")
            + f", {w['restarts']} restarts"
        )
        if w["lastError"]:
            line += f"; last error: {w['lastError']}"
        lines.append(line)
    for q in p.get("quarantined", []):
        lines.append(
            f"quarantined {q['path']}: a worker died on it {q['crashes']} times "
            f"({q['cause']}); skipped as index_error until the file changes"
        )
    return lines


def render_status(status: Status) -> str:
    d = status.as_dict()
    if d["generation"] is None:
        return (
            f"index {d['indexDir']}: nothing published yet; {d['eligible']} eligible sessions.\n"
            "Run `pipeline run --once` to build the index.\n"
            + "".join(line + "\n" for line in _render_pipeline(d["pipeline"]))
        )
    ratio = d["cacheSourceRatio"]
    lines = [
        f"index       {d['indexDir']} (generation {d['generation']})",
        f"sessions    {d['indexed']} indexed of {d['eligible']} eligible; "
        f"{d['stale']} stale, {d['new']} new, {d['skipped']} skipped, "
        f"{d['incomplete']} incomplete",
        f"tiers       {d['hot']} hot, {d['cold']} cold; agents "
        + ", ".join(f"{k} {v}" for k, v in d["agents"].items()),
        "redacted    "
        + (", ".join(f"{k} {v}" for k, v in d["redactions"].items()) or "no credentials"),
        f"bytes       source {d['sourceBytes']['total']:,}; index {d['indexBytes']:,} "
        f"(hot ratio {ratio['hot']}, cold ratio {ratio['cold']} or {ratio['coldWithLexicon']} "
        f"with the cold lexicon, index ratio {ratio['index']})",
    ]
    lines += _render_pipeline(d["pipeline"])
    if d["reasons"]:
        lines.append("reasons     " + ", ".join(d["reasons"]))
    for s in d["incompleteSessions"]:
        lines.append(f"incomplete  {s['path']}: {', '.join(s['reasons'])}")
    for sk in d["skippedSessions"]:
        lines.append(f"skipped     {sk['path']}: {sk['reason']}")
    for p in d["staleSessions"]:
        lines.append(f"stale       {p}")
    for p in d["newSessions"]:
        lines.append(f"new         {p}")
    return "\n".join(lines) + "\n"
