"""`pipeline status`: how complete and healthy the published index is, right now.

It compares CURRENT's manifest with a fresh look at the roots: a session whose stamp moved
since it was indexed is *stale*, a file the manifest does not know is *new*, and a session
whose records carry coverage reasons is *incomplete* (named, with its reasons). Record types
an adapter does not know are listed per agent and writer version (``unknownRecordTypes``), so a
writer update that changes the format shows here instead of passing silently.

The ``upgrade`` section says when the published index is another format or derivation than
this build's (pipeline.upgrade): ``upgrading`` while a pipeline derives it again (queries
answer ``index_upgrading`` if they cannot read the old one), ``needed`` when none does (then
they answer ``index_outdated``, and `pipeline run --once` or `pipeline run` derives it).

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

from pipeline.discovery import discover, unchanged
from pipeline.keepout import KeepOut
from pipeline.resume import PUBLISH_STAGE
from pipeline.upgrade import FORMAT_CHANGED, detect
from store import pids
from store.archive import KEPT, NOT_KEPT, Archive
from store.checkpoints import CheckpointStore
from store.config import Config
from store.errors import SchemaVersionError, SnapshotMissing, StoreError, free_bytes
from store.journal import FileJournal
from store.layout import IndexLayout
from store.reader import open_snapshot
from store.reasons import DISK_FULL, MAX_ENTRY_CHARS, READ_NOTES
from store.records import SessionEntries
from store.upgrading import read_mark

__all__ = ["Status", "collect_status", "render_status"]

# The stored display text was cut to maxEntryChars; postings and vocabularies cover the whole
# text, so it hides nothing from a literal recall (query.recall.view_reasons says the same).


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
    # sessions whose only reason is max_entry_chars: display text cut, search still complete
    display_cut: int = 0
    hot: int = 0
    cold: int = 0
    source_bytes: dict[str, int] = field(default_factory=lambda: {"hot": 0, "cold": 0})
    record_bytes: dict[str, int] = field(default_factory=lambda: {"hot": 0, "cold": 0})
    entries_bytes: int = 0
    lexicon_bytes: int = 0
    index_bytes: int = 0
    reasons: list[str] = field(default_factory=list)
    incomplete_sessions: list[dict[str, Any]] = field(default_factory=list)
    # sessions whose only reasons say how they were read (store.reasons.READ_NOTES): no gap
    noted_sessions: list[dict[str, Any]] = field(default_factory=list)
    stale_sessions: list[str] = field(default_factory=list)
    new_sessions: list[str] = field(default_factory=list)
    skipped_sessions: list[dict[str, str]] = field(default_factory=list)
    agents: dict[str, int] = field(default_factory=dict)
    pipeline: dict[str, Any] = field(default_factory=dict)
    # (agent, writer version, record type) → [records, sessions]: what adapters do not know
    unknown: dict[tuple[str, str, str], list[int]] = field(default_factory=dict)
    redactions: dict[str, int] = field(default_factory=dict)
    # sessions whose source is gone, read from the archive (not stale: nothing to be behind)
    archived: int = 0
    archive: dict[str, Any] = field(default_factory=dict)
    # the index is (being) derived again after an upgrade; None when it is this build's
    upgrade: dict[str, Any] | None = None

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
            "displayCutSessions": self.display_cut,
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
            "notedSessions": self.noted_sessions,
            "staleSessions": self.stale_sessions,
            "newSessions": self.new_sessions,
            "skippedSessions": self.skipped_sessions,
            "archived": self.archived,
            "archive": self.archive,
            "unknownRecordTypes": [
                {"agent": a, "writerVersion": v, "type": t, "records": n, "sessions": s}
                for (a, v, t), (n, s) in sorted(self.unknown.items())
            ],
            "pipeline": self.pipeline,
            "upgrade": self.upgrade,
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

    return True


# A child's process beats every second (``RunSettings.alive_every_s``): silent for this long
# when the supervisor last wrote its state, status does not call the child running.
_SILENT_S = 5.0


def collect_pipeline(config: Config, now_ns: int | None = None) -> dict[str, Any]:
    """The always-on pipeline's journal, positions, lag and processes (never writes)."""
    from pipeline.supervisor import read_run_state  # keeps `status` light when unused

    now_ns = time.time_ns() if now_ns is None else now_ns
    layout = IndexLayout(config.index_dir)
    try:
        checkpoints = CheckpointStore(layout.checkpoints).all()
    except StoreError:
        checkpoints = {}  # another format's (the upgrade section says so) or damaged
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
    running = run.get("state") in ("running", "stopping") and pids.alive(run.get("pid"))
    workers = []
    for child in run.get("children", []):
        beat = child.get("heartbeatAt")
        alive = child.get("aliveAt")
        state = child.get("state") if running else "stopped"
        written = run.get("updatedAt")
        if (
            state == "running"
            and isinstance(alive, int | float)
            and isinstance(written, int | float)
            and (written - alive) / 1e3 > _SILENT_S
        ):
            state = "not responding"  # it beats every second: silent when the state was written
        workers.append(
            {
                "name": child.get("name"),
                "role": child.get("role"),
                "pid": child.get("pid"),
                "state": state,
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
        # every process up, the first reconcile journaled, the workers warm (pipeline.ready)
        "ready": bool(running and run.get("ready")),
        "readyAt": run.get("readyAt") if running else None,
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
        # Said here, not only by the run state: on a full disk that file cannot be rewritten.
        "disk": _disk(config.index_dir, workers),
        # sessions that killed an index worker every time, skipped until their file changes
        "quarantined": run.get("quarantined", []) if running else [],
    }


def _upgrade(config: Config) -> dict[str, Any] | None:
    """``upgrading`` (a live pipeline's mark), ``needed`` (another format or derivation, no
    pipeline on it), or None."""
    from pipeline.engine import policy_of  # keeps `status` light when unused

    mark = read_mark(config.index_dir)
    if mark is not None and mark.alive:
        return {"state": "upgrading", **mark.as_dict()}
    found = detect(config.index_dir, policy_of(config).fingerprint())
    if found is None:
        return None
    return {
        "state": "needed",
        "reason": found.reason,
        "detail": found.detail,
        # a format this build cannot read answers nothing until it is derived again
        "readable": found.reason != FORMAT_CHANGED,
        "run": "pipeline run --once",
    }


def collect_status(config: Config) -> Status:
    """Read CURRENT and the roots; never writes."""
    status = Status(index_dir=str(config.index_dir))
    # every agent whose root is read, with none indexed as well: a blind adapter shows as 0
    status.agents = dict.fromkeys(config.roots, 0)
    status.pipeline = collect_pipeline(config)
    status.upgrade = _upgrade(config)
    keep_out = KeepOut(config)
    candidates, problems = discover(config.roots)
    candidates = keep_out.keep(candidates)
    live = {c.path: c for c in candidates}
    status.eligible = len(candidates) + len(problems)
    try:
        snapshot = open_snapshot(config.index_dir)
    except SnapshotMissing:
        status.new = len(candidates)
        status.new_sessions = sorted(live)
        return status
    except SchemaVersionError:
        return status  # nothing this build can count in it: the upgrade section says why
    manifest = snapshot.manifest
    status.generation = manifest.generation
    status.published_ns = manifest.created_ns
    status.pipeline["lastGenerationAt"] = manifest.created_ns // 1_000_000
    status.reasons = list(manifest.reasons)
    archive = Archive(config.archive_dir)
    archive_bytes = archive.usage()
    status.index_bytes = _tree_bytes(config.index_dir)
    if config.archive_dir.is_relative_to(config.index_dir):
        status.index_bytes -= archive_bytes  # kept copies, not index: said on their own line
    for name in manifest.lexicon:
        with contextlib.suppress(OSError):
            status.lexicon_bytes += snapshot.layout.record_path(name).stat().st_size
    known: set[str] = set()
    not_kept: list[str] = []
    kept = 0
    for s in manifest.sessions:
        known.add(s.path)
        c = live.get(s.path)
        if s.archive == KEPT:
            kept += 1
        elif s.archive == NOT_KEPT:
            not_kept.append(s.path)
        if s.archived:
            status.archived += 1
        elif c is None or not unchanged(s.agent, s.stamp, c.stamp):
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
        for version, kind, n in s.unknown_records:
            tally = status.unknown.setdefault((s.agent, version, kind), [0, 0])
            tally[0] += n
            tally[1] += 1
        reasons = sorted({r for v in s.views for r in v.reasons if v.branches == "active"})
        if MAX_ENTRY_CHARS in reasons:
            status.display_cut += 1
            reasons.remove(MAX_ENTRY_CHARS)  # not a gap: a literal recall counts it complete too
        notes = [r for r in reasons if r in READ_NOTES]
        reasons = [r for r in reasons if r not in READ_NOTES]  # nor these: recall says notes
        if notes and not reasons:
            status.noted_sessions.append({"path": s.path, "reasons": notes})
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
    status.archive = {
        "keep": config.archive.keep,
        "dir": str(config.archive_dir),
        "bytes": archive_bytes,
        "maxBytes": config.archive.max_bytes,
        "full": bool(not_kept) or archive_bytes >= config.archive.max_bytes,
        "archivedSessions": status.archived,
        "keptSessions": kept,
        "notKeptSessions": not_kept,  # the cap stopped their copy: coverage archive_full
        "forgotten": len(archive.tombstones()),
        "bytesPerSourceByte": round(archive_bytes / total, 4)
        if (total := sum(st.size for st in manifest.sessions))
        else None,
    }
    return status


# Below this much room an index write may fail at any moment: status says so before it does.
_LOW_DISK_BYTES = 16 << 20


def _disk(index_dir: Path, workers: list[dict[str, Any]]) -> dict[str, Any]:
    free = free_bytes(index_dir)
    paused = any(w["state"] == DISK_FULL for w in workers)
    full = paused or (free is not None and free < _LOW_DISK_BYTES)
    return {"freeBytes": free, "full": full, "paused": paused}


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
    disk = p["disk"]
    room = f"{disk['freeBytes']:,} bytes free" if disk["freeBytes"] is not None else "unknown"
    full = [
        f"disk        FULL ({room}): "
        + (
            "indexing is paused and resumes by itself when there is room"
            if disk["paused"]
            else "the next index write may fail; free some space"
        )  # fmt: skip
    ]
    lag = p["lag"]
    oldest = lag["oldestPendingSeconds"]
    positions = ", ".join(f"{k} {v}" for k, v in p["positions"].items())
    head = p["journal"]["head"]
    lines = [
        f"pipeline    {'running (pid ' + str(p['pid']) + ')' if p['running'] else 'not running'}"
        + ("" if not p["running"] else ", ready" if p["ready"] else ", starting")
        + f"; lag {lag['events']} events"
        + (f", oldest waiting {oldest:.1f}s" if oldest is not None else "")
        + f"; {p['restarts']} restarts",
        # an empty journal's head is -1: say what that means instead of printing it
        f"journal     head {head}; positions {positions}"
        if isinstance(head, int) and head >= 0
        else "journal     empty (no change journaled yet: `pipeline run` journals them)",
        *(full if disk["full"] else []),
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


def _ratios(ratio: dict[str, float | None]) -> str:
    """`` (index/source 0.62; hot 0.44, cold 0.14 or 0.24 with the cold lexicon)``, leaving
    out a tier that holds no bytes instead of printing ``None``."""

    def f(x: float | None) -> str:
        return f"{x:.2f}"

    parts = []
    if ratio["hot"] is not None:
        parts.append(f"hot {f(ratio['hot'])}")
    if ratio["cold"] is not None:
        cold = f"cold {f(ratio['cold'])}"
        if ratio["coldWithLexicon"] is not None and ratio["coldWithLexicon"] != ratio["cold"]:
            cold += f" or {f(ratio['coldWithLexicon'])} with the cold lexicon"
        parts.append(cold)
    if ratio["index"] is None:
        return ""
    tiers = f"; {', '.join(parts)}" if parts else ""
    return f" (index/source {f(ratio['index'])}{tiers})"


def _archive_line(d: dict[str, Any]) -> str:
    a = d["archive"]
    if not a:
        return ""
    size = f"{a['bytes']:,} of {a['maxBytes']:,} bytes in {a['dir']}"
    if not a["keep"]:
        return (
            f"archive     off ([archive] keep = false): a deleted source drops its session; {size}"
        )
    ratio = a["bytesPerSourceByte"]
    return (
        f"archive     {d['archived']} sessions read from the archive (source deleted), "
        f"{a['keptSessions']} live sessions kept; {size}"
        + (f" ({ratio:.2f} per source byte)" if ratio is not None else "")
        + (f"; FULL: {len(a['notKeptSessions'])} not kept" if a["full"] else "")
        + (f"; {a['forgotten']} forgotten" if a["forgotten"] else "")
    )


def _upgrade_line(u: dict[str, Any] | None) -> list[str]:
    if u is None:
        return []
    why = {
        "format": "written by another sessiondex version",
        "derivation": "built by another derivation or indexing policy",
        "journal": "journal written by another sessiondex version",
    }.get(u["reason"], u["reason"])
    if u["state"] == "upgrading":
        return [
            f"upgrade     {why} ({u['detail']}): being derived again by pid {u['pid']}; "
            "queries answer index_upgrading until it publishes (when the old one is unreadable)"
        ]
    answer = "" if u["readable"] else "; queries answer index_outdated until then"
    return [f"upgrade     {why} ({u['detail']}): run `{u['run']}` to derive it again{answer}"]


def render_status(status: Status) -> str:
    d = status.as_dict()
    if d["generation"] is None and d["upgrade"] is not None:
        return (
            f"index       {d['indexDir']}: no generation this build can read\n"
            + "".join(line + "\n" for line in _upgrade_line(d["upgrade"]))
            + "".join(line + "\n" for line in _render_pipeline(d["pipeline"]))
        )
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
        f"{d['incomplete']} incomplete" + (f", {d['archived']} archived" if d["archived"] else ""),
        f"tiers       {d['hot']} hot, {d['cold']} cold; agents "
        + ", ".join(f"{k} {v}" for k, v in d["agents"].items()),
        "redacted    "
        + (", ".join(f"{k} {v}" for k, v in d["redactions"].items()) or "no credentials"),
        f"bytes       source {d['sourceBytes']['total']:,}; index {d['indexBytes']:,}"
        + _ratios(ratio),
    ]
    lines.append(_archive_line(d))
    lines += _upgrade_line(d["upgrade"])
    if d["displayCutSessions"]:
        lines.append(
            f"display     {d['displayCutSessions']} sessions have entries longer than "
            "maxEntryChars: shown cut, searched whole (not a coverage gap)"
        )
    lines += _render_pipeline(d["pipeline"])
    if d["reasons"]:
        lines.append("reasons     " + ", ".join(d["reasons"]))
    for u in d["unknownRecordTypes"]:
        lines.append(
            f"unknown     {u['agent']} {u['writerVersion'] or '(no version)'}: {u['type']} "
            f"in {u['records']} records of {u['sessions']} sessions"
        )
    for s in d["incompleteSessions"]:
        lines.append(f"incomplete  {s['path']}: {', '.join(s['reasons'])}")
    for s in d["notedSessions"]:
        lines.append(f"read        {s['path']}: {', '.join(s['reasons'])} (no gap)")
    for sk in d["skippedSessions"]:
        lines.append(f"skipped     {sk['path']}: {sk['reason']}")
    for p in d["archive"].get("notKeptSessions", []):
        lines.append(f"not kept    {p}: archive_full (raise [archive] maxBytes)")
    for p in d["staleSessions"]:
        lines.append(f"stale       {p}")
    for p in d["newSessions"]:
        lines.append(f"new         {p}")
    return "\n".join(lines) + "\n"
