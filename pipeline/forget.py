"""`pipeline forget`: take sessions out of the index and the archive, for good.

::

    select (sessions by path or id, --project DIR, --before DATE, --agent A; filters AND)
      ─► tombstones += blake3(path)          a source still on disk is never indexed again
      ─► the pipeline runs (it holds the writer lock)?
           yes ─► its watcher sees the tombstones and journals a ``forget`` event per session;
                  the owning worker removes the chain, the publisher drops the session and
                  collects every older generation once the grace period has passed; this
                  command waits until the published index no longer names them
           no  ─► `run --once`'s catch-up does the same here (and takes in whatever else
                  changed): a generation without the sessions (its cold lexicon rebuilt
                  without their terms), every older generation collected at once

Nothing of a forgotten session is left to read afterwards: not its records, not a lexicon
segment holding its terms, not its archived bytes (tests/unit/archive/test_forget.py greps
the index and archive folders for a planted word). A tombstone holds a hash of the path.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Final

import structlog

from store.archive import source_of
from store.archive_writer import ArchiveWriter
from store.config import Config
from store.errors import SnapshotMissing, StoreLocked
from store.reader import open_snapshot, read_current
from store.records import Manifest

__all__ = ["ForgetReport", "Selection", "forget", "parse_before", "select"]

log = structlog.get_logger()

_AGE: Final = re.compile(r"^(\d+)([dhm])$")  # an argument's own syntax, not prose
_WAIT_STEP_S: Final = 0.1


class ForgetError(ValueError):
    """A selection that cannot be made (a bad date, nothing selected at all)."""


@dataclass(frozen=True, slots=True)
class Selection:
    """What to forget: *sessions* (paths or ids) and/or filters, which all must hold."""

    sessions: tuple[str, ...] = ()
    project: str | None = None
    before_ns: int | None = None
    agent: str | None = None

    @property
    def empty(self) -> bool:
        return not (self.sessions or self.project or self.before_ns is not None or self.agent)


@dataclass(slots=True)
class ForgetReport:
    forgotten: list[dict[str, str]] = field(default_factory=list)
    dry_run: bool = False
    by: str = ""  # "this command" or "the running pipeline"
    generation: int | None = None
    unmatched: list[str] = field(default_factory=list)
    waited_s: float = 0.0
    pending: list[str] = field(default_factory=list)  # still published when the wait ended

    def as_dict(self) -> dict[str, Any]:
        return {
            "forgotten": self.forgotten,
            "count": len(self.forgotten),
            "dryRun": self.dry_run,
            "by": self.by,
            "generation": self.generation,
            "unmatched": self.unmatched,
            "pending": self.pending,
        }


def parse_before(text: str, now: datetime | None = None) -> int:
    """``--before``: an ISO date (its local midnight), an ISO date-time, or an age (``30d``,
    ``12h``, ``90m``) back from now; epoch nanoseconds."""
    now = now or datetime.now().astimezone()
    age = _AGE.match(text.strip())
    if age:
        n, unit = int(age.group(1)), age.group(2)
        delta = {"d": timedelta(days=n), "h": timedelta(hours=n), "m": timedelta(minutes=n)}
        return int((now - delta[unit]).timestamp() * 1e9)
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ForgetError(
            f"--before takes an ISO date (2026-01-31), a date-time or an age like 30d, not {text!r}"
        ) from None
    if when.tzinfo is None:
        when = when.astimezone()  # a local time
    return int(when.timestamp() * 1e9)


def _matches_target(target: str, path: str, session_id: str, agent: str) -> bool:
    if "/" in target or target.endswith((".jsonl", ".json")) or target.startswith(("~", ".")):
        given = os.path.abspath(os.path.expanduser(target))
        return path in (given, os.path.realpath(given))
    prefix, colon, rest = target.partition(":")
    if colon and rest and prefix == agent:
        return session_id == rest
    name = os.path.basename(path)
    stem = name[: -len(".jsonl")] if name.endswith(".jsonl") else name
    return target in (session_id, stem)


def _under(cwd: str, folder: str) -> bool:
    cwd, folder = os.path.normpath(cwd), os.path.normpath(folder)
    return cwd == folder or cwd.startswith(folder.rstrip("/") + "/")


def select(manifest: Manifest, selection: Selection) -> tuple[list[dict[str, str]], list[str]]:
    """The sessions (path, agent, id) of *manifest* the selection names, and the targets
    that named none."""
    if selection.empty:
        raise ForgetError("name sessions, or select them with --project, --before or --agent")
    project = os.path.abspath(os.path.expanduser(selection.project)) if selection.project else None
    found: dict[str, dict[str, str]] = {}
    hit: set[str] = set()
    for s in manifest.sessions:
        if selection.agent is not None and s.agent != selection.agent:
            continue
        if project is not None and not (s.cwd and _under(s.cwd, project)):
            continue
        if selection.before_ns is not None and not s.mtime_ns < selection.before_ns:
            continue
        if selection.sessions:
            # a session's old versions kept apart go with it (their path names the file)
            named = [
                t
                for t in selection.sessions
                if _matches_target(t, s.path, s.session_id, s.agent)
                or _matches_target(t, source_of(s.path), s.session_id, s.agent)
            ]
            if not named:
                continue
            hit.update(named)
        found[s.path] = {"path": s.path, "agent": s.agent, "id": f"{s.agent}:{s.session_id}"}
    for k in manifest.skipped:  # a file that could not be indexed can be forgotten by path
        if any(_matches_target(t, k.path, "", k.agent) for t in selection.sessions):
            hit.update(t for t in selection.sessions if _matches_target(t, k.path, "", k.agent))
            found.setdefault(k.path, {"path": k.path, "agent": k.agent, "id": ""})
    unmatched = [t for t in selection.sessions if t not in hit]
    return [found[p] for p in sorted(found)], unmatched


def forget(
    config: Config,
    selection: Selection,
    *,
    dry_run: bool = False,
    wait_s: float = 60.0,
    clock: Any = time.monotonic,
) -> ForgetReport:
    """Forget what *selection* names (see the module docstring)."""
    report = ForgetReport(dry_run=dry_run)
    try:
        manifest = open_snapshot(config.index_dir).manifest
    except SnapshotMissing:
        manifest = Manifest(0, 0, "", {}, 0, ())
    report.forgotten, report.unmatched = select(manifest, selection)
    paths = [f["path"] for f in report.forgotten]
    if dry_run or not paths:
        return report
    log.info("forget.started", sessions=len(paths))
    archive = ArchiveWriter(config.archive_dir, max_bytes=config.archive.max_bytes)
    archive.forget(paths)  # first: from now on nothing indexes them again
    try:
        report.generation = _apply(config, archive, manifest, paths)
        report.by = "this command"
    except StoreLocked:
        report.by = "the running pipeline"
        started = clock()
        report.pending = _wait(config, set(paths), wait_s, clock)
        report.waited_s = clock() - started
    log.info("forget.done", sessions=len(paths), by=report.by, pending=len(report.pending))
    return report


def _apply(
    config: Config, archive: ArchiveWriter, manifest: Manifest, paths: Sequence[str]
) -> int | None:
    """No pipeline runs: the catch-up journals a forget event per session (its watcher sees
    the tombstones), publishes without them and collects every older generation now.
    Raises StoreLocked when a pipeline holds the index."""
    from pipeline.catchup import catch_up  # deferred: the pool and stages only when applied

    generation = None
    if manifest.generation:
        caught = catch_up(config, collect_now=True)
        generation = caught.generations[-1] if caught.generations else None
    # with keep = false too: what was kept is removed all the same
    for path in paths:
        archive.remove(path)
    archive.collect(age_s=0)
    return generation


def _wait(config: Config, paths: set[str], wait_s: float, clock: Any) -> list[str]:
    """Until the published index names none of *paths* (the running pipeline forgot them),
    or *wait_s* passed; returns those still named."""
    deadline = clock() + wait_s
    seen = -1
    pending = sorted(paths)
    while True:
        generation = read_current(config.index_dir)
        if generation is not None and generation != seen:
            seen = generation
            try:
                manifest = open_snapshot(config.index_dir).manifest
            except (SnapshotMissing, OSError):
                manifest = None
            if manifest is not None:
                named = {s.path for s in manifest.sessions} | {k.path for k in manifest.skipped}
                pending = sorted(paths & named)
                if not pending:
                    return []
        if clock() >= deadline:
            return pending
        time.sleep(_WAIT_STEP_S)


def render_forget(report: ForgetReport) -> str:
    lines: list[str] = []
    verb = "would forget" if report.dry_run else "forgot"
    for f in report.forgotten:
        lines.append(f"{verb}  {f['path']}" + (f"  ({f['id']})" if f["id"] else ""))
    for t in report.unmatched:
        lines.append(f"no session matches {t!r}")
    if not report.forgotten:
        lines.append("nothing to forget")
    elif report.dry_run:
        lines.append(
            f"{len(report.forgotten)} sessions; run again without --dry-run to forget them"
        )
    elif report.pending:
        lines.append(
            f"the running pipeline has not dropped {len(report.pending)} of them yet "
            f"(waited {report.waited_s:.0f} s); they are tombstoned and will go: check "
            "`pipeline status`"
        )
    else:
        lines.append(
            f"{len(report.forgotten)} sessions forgotten by {report.by}: removed from the index "
            "and the archive, and never indexed again"
            + (
                ""
                if report.by == "this command"
                else " (older generations are collected after the grace period)"
            )
        )
    return "\n".join(lines) + "\n"
