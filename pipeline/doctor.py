"""`pipeline doctor`: is everything that keeps the memory current in place, right now?

Five checks, each ``ok``, ``warn`` or ``fail`` with a sentence saying what to do:

* sources      every configured root is a readable folder (a missing root is only empty);
* index        a generation has been published;
* current      the index holds every session file the roots hold now, unchanged;
* pipeline     `pipeline run` is running (without it the index goes stale on the next write);
* query serve  a server accepts connections on the index socket (without it queries still
               work, in-process, with a slower start);
* archive      the copies of indexed sessions are being kept (a warning when ``keep`` is off,
               the cap is near or reached, or some sessions are not kept).

A ``fail`` means an answer can be wrong or missing: the command exits 1. Reads only, like
`pipeline status`, whose collection it reuses.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pipeline.discovery import discover
from pipeline.status import Status, collect_status
from store.config import Config

__all__ = ["Check", "Diagnosis", "diagnose", "query_socket", "render_diagnosis"]

Level = Literal["ok", "warn", "fail"]

# Where `query serve` listens (query.transport.socket_path; pipeline may not import query, and
# tests/unit/pipeline/test_doctor.py checks the two agree).
SERVE_DIR, SOCKET_NAME = "serve", "query.sock"


def query_socket(index_dir: Path) -> Path:
    return Path(index_dir) / SERVE_DIR / SOCKET_NAME


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    level: Level
    message: str
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Diagnosis:
    checks: tuple[Check, ...]

    @property
    def ok(self) -> bool:
        return all(c.level != "fail" for c in self.checks)

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "checks": [
                {"name": c.name, "level": c.level, "message": c.message, **c.detail}
                for c in self.checks
            ],
        }


def _sources(config: Config) -> Check:
    found, problems = discover(config.roots)
    per_agent = {agent: 0 for agent in config.roots}
    for c in found:
        per_agent[c.agent] = per_agent.get(c.agent, 0) + 1
    unreadable = [c.path for c in found if not os.access(c.path, os.R_OK)]
    unreadable += [path for path, _, _ in problems]
    parts: list[str] = []
    bad_roots: list[str] = []
    for agent, root in sorted(config.roots.items()):
        if not root.exists():
            parts.append(f"{agent} {root}: missing (nothing to index)")
        elif not root.is_dir() or not os.access(root, os.R_OK | os.X_OK):
            bad_roots.append(str(root))
            parts.append(f"{agent} {root}: NOT READABLE")
        else:
            parts.append(f"{agent} {root}: {per_agent.get(agent, 0)} sessions")
    detail = {"sessions": per_agent, "unreadable": sorted(unreadable), "badRoots": bad_roots}
    if bad_roots or unreadable:
        what = f"{len(unreadable)} session files cannot be read" if unreadable else ""
        return Check(
            "sources",
            "fail",
            "; ".join(parts)
            + (f"; {what} (check their permissions)" if what else "")
            + ": fix the permissions or the [sources] paths",
            detail,
        )
    if not found:
        return Check(
            "sources",
            "warn",
            "; ".join(parts) + ": no session files yet (is [sources] right?)",
            detail,
        )
    return Check("sources", "ok", "; ".join(parts), detail)


def _index(status: Status) -> Check:
    upgrade = status.upgrade
    if upgrade is not None:
        # another sessiondex version's (or derivation's) index: derived again by `pipeline run`
        what = f"{status.index_dir} is another version's ({upgrade['reason']}: {upgrade['detail']})"
        if upgrade["state"] == "upgrading":
            return Check(
                "index", "warn", f"{what}: pid {upgrade['pid']} is deriving it again", upgrade
            )
        level: Level = "warn" if upgrade["readable"] else "fail"
        return Check("index", level, f"{what}: run `{upgrade['run']}` to derive it again", upgrade)
    if status.generation is None:
        return Check(
            "index",
            "fail",
            f"nothing published in {status.index_dir} yet: run `pipeline run --once`",
        )
    return Check(
        "index",
        "ok",
        f"{status.index_dir}, generation {status.generation}",
        {"generation": status.generation},
    )


def _current(status: Status) -> Check:
    detail = {
        "indexed": status.indexed,
        "eligible": status.eligible,
        "stale": status.stale,
        "new": status.new,
        "skipped": status.skipped,
    }
    behind = status.stale + status.new
    if status.generation is None:
        return Check("current", "fail", f"{status.new} session files are not indexed", detail)
    head = f"{status.indexed} of {status.eligible} sessions indexed"
    if not behind:
        return Check("current", "ok", head + ", none stale or new", detail)
    catching_up = status.pipeline.get("running") and status.pipeline.get("lag", {}).get("events")
    message = f"{head}; {status.stale} stale, {status.new} new since generation {status.generation}"
    if catching_up:
        return Check("current", "warn", message + " (the running pipeline is catching up)", detail)
    return Check(
        "current",
        "fail",
        message + ": run `pipeline run --once`, or start the pipeline service",
        detail,
    )


def _pipeline(status: Status) -> Check:
    p = status.pipeline
    if p.get("running"):
        restarts = p.get("restarts", 0)
        quarantined = len(p.get("quarantined", []))
        message = f"running (pid {p.get('pid')}), {restarts} restarts"
        if quarantined:
            message += f", {quarantined} sessions quarantined (see `pipeline status`)"
        return Check("pipeline", "warn" if quarantined else "ok", message, {"pid": p.get("pid")})
    return Check(
        "pipeline",
        "warn",
        "`pipeline run` is not running: the index stays as it is until the next "
        "`pipeline run --once` (start it: `systemctl --user start sessiondex-pipeline`)",
    )


def _query_serve(index_dir: Path) -> Check:
    path = query_socket(index_dir)
    if not path.exists():
        return Check(
            "query serve",
            "warn",
            "not running: queries are answered in-process (slower to start); "
            "`systemctl --user start sessiondex-query` starts it",
            {"socket": str(path)},
        )
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(2.0)
    try:
        probe.connect(os.fspath(path))
    except OSError as exc:
        return Check(
            "query serve",
            "warn",
            f"a socket is left at {path} but nothing answers ({exc.strerror or exc}): "
            "queries run in-process; restart `query serve`",
            {"socket": str(path)},
        )
    finally:
        probe.close()
    return Check("query serve", "ok", f"listening on {path}", {"socket": str(path)})


def _archive(status: Status) -> Check:
    a = status.archive
    if not a:
        return Check("archive", "ok", "nothing indexed yet")
    detail = {k: a[k] for k in ("dir", "bytes", "maxBytes", "archivedSessions", "keptSessions")}
    if not a["keep"]:
        return Check(
            "archive",
            "warn",
            "off ([archive] keep = false): a session whose file is deleted (Claude Code removes "
            "month-old ones) leaves the index with it",
            detail,
        )
    used = f"{a['bytes']:,} of {a['maxBytes']:,} bytes"
    if a["full"] or a["bytes"] >= 0.9 * a["maxBytes"]:
        missing = len(a["notKeptSessions"])
        return Check(
            "archive",
            "warn",
            f"{used} used"
            + (f"; {missing} sessions are not kept (archive_full)" if missing else "")
            + ": raise [archive] maxBytes, or forget old sessions (`pipeline forget --before`)",
            detail,
        )
    return Check(
        "archive",
        "ok",
        f"{a['keptSessions']} live sessions kept, {a['archivedSessions']} read from the archive; "
        f"{used} in {a['dir']}",
        detail,
    )


def diagnose(config: Config) -> Diagnosis:
    status = collect_status(config)
    return Diagnosis(
        (
            _sources(config),
            _index(status),
            _current(status),
            _pipeline(status),
            _query_serve(config.index_dir),
            _archive(status),
        )
    )


def render_diagnosis(diagnosis: Diagnosis) -> str:
    lines = [f"{c.level:<5} {c.name:<12} {c.message}" for c in diagnosis.checks]
    failed = sum(c.level == "fail" for c in diagnosis.checks)
    warned = sum(c.level == "warn" for c in diagnosis.checks)
    lines.append(
        "all checks passed" + (f" ({warned} warnings)" if warned else "")
        if not failed
        else f"{failed} checks failed, {warned} warnings"
    )
    return "\n".join(lines) + "\n"
