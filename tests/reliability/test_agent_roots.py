"""Hostile placements in every registered agent's root (issue 22: "no answer is complete:
true while any in-scope source could not be read in full").

The agents come from ``store.agents.agent_names()`` and where a session lives under each root
from its adapter (``files``: the name patterns and folders; ``database``: the file the
sessions are rows of), so the next agent registered is attacked without a line here.

Each kind of placement gets a tree of its own (one root per agent; a session database lives
in its root itself, so one hostile database per root), indexed and queried by one child
process under a deadline (a fifo that blocks an open must not stall anything), all kinds at
once. What must hold for every agent:

- the child ends within its deadline and without an exception, ``pipeline status`` included;
- a session database (OpenCode, Goose) that is garbage, zero bytes, half a file, a directory,
  a link loop, a symlink, a fifo or unreadable is named
  (``source_unreadable``) by status and by every recall for that agent, never ``complete``;
- a session file that cannot be opened (mode 000) is named the same way; a session file of
  random bytes or cut inside a line is indexed (its lines named) or named, never absent;
- a link or a fifo with a session's name is no session (links are never followed out of a
  root): nothing is indexed from it.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from stages.agents import adapter
from store.agents import agent_names
from tests.helpers import PiRoot

DEADLINE_S = 90.0
# Run in a child, so a hang is a failed case and not a stalled suite.
DRIVER = r"""
import json, sys
from pipeline.catchup import catch_up
from pipeline.status import collect_status
from query.engine import Engine
from store.agents import agent_names
from store.config import load_config

config = load_config(sys.argv[1])
catch_up(config, processes=1)
out = {"recall": {}, "indexed": {}}
with Engine(config) as engine:
    for agent in agent_names():
        page = engine.recall({"query": "hostileterm", "scope": "global", "agent": agent}, cwd="/")
        out["recall"][agent] = page["coverage"]
status = collect_status(config)
out["skipped"] = status.skipped_sessions
from store.reader import open_snapshot
out["paths"] = [s.path for s in open_snapshot(config.index_dir).manifest.sessions]
print(json.dumps(out))
"""


def session_place(root: Path, agent: str, kind: str) -> Path:
    """Where a session of *agent* would be under *root*, named after *kind*."""
    found = adapter(agent)
    if found.database is not None:
        return root / found.database.file.replace("*", "").replace("?", "0")
    pattern = found.files.patterns[0]
    folder = root / f"proj-{kind}"
    if found.files.folders:
        folder = folder / found.files.folders[0]
    return folder / pattern.replace("*", f"hostile-{kind}").replace("?", "0")


def _garbage(path: Path, agent: str) -> None:
    path.write_bytes(os.urandom(3000) + b"\n" + os.urandom(500) + b"\n")


def _zero(path: Path, agent: str) -> None:
    path.write_bytes(b"")


def _directory(path: Path, agent: str) -> None:
    path.mkdir()


def _loop(path: Path, agent: str) -> None:
    path.symlink_to(path.name)


def _symlink(path: Path, agent: str) -> None:
    target = path.parent / f"real-{path.name}"
    target.write_bytes(b"")
    path.symlink_to(target.name)


def _fifo(path: Path, agent: str) -> None:
    os.mkfifo(path)


def _unreadable(path: Path, agent: str) -> None:
    path.write_bytes(b'{"type":"session"}\n')
    path.chmod(0)


def _truncated(path: Path, agent: str) -> None:
    """A session cut short: a database cut in half (rows of its layout's own tables, so the
    next database agent gets one too), a session file ending inside a line."""
    layout = adapter(agent).database
    if layout is None:
        path.write_bytes(b'{"type":"session","id":"t1"}\n{"type":"message","id":"m1","te')
        return
    db = sqlite3.connect(path)
    with db:
        for table in layout.tables:
            named = (table.key, *table.order, *table.json, table.updated)
            columns = [c for c in dict.fromkeys(named) if c]
            db.execute(f'CREATE TABLE "{table.name}" ({", ".join(columns)})')
            db.executemany(
                f'INSERT INTO "{table.name}" VALUES ({", ".join("?" * len(columns))})',
                [(*(["s1"] * (len(columns) - 1)), n) for n in range(2000)],
            )
    db.close()
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


PLACEMENTS: dict[str, Callable[[Path, str], None]] = {
    "garbage": _garbage,
    "zero": _zero,
    "directory": _directory,
    "loop": _loop,
    "symlink": _symlink,
    "fifo": _fifo,
    "unreadable": _unreadable,
    "truncated": _truncated,
}


def _without_read_override() -> list[str] | None:
    """Root reads a file of mode 000: its child runs without the capabilities that let it
    (``setpriv``), so ``unreadable`` is. None when that cannot be done here."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return None
    return [setpriv, "--bounding-set=-dac_override,-dac_read_search"]


def test_hostile_placements_in_every_agent_root(tmp_path: Path) -> None:
    children: dict[str, tuple[subprocess.Popen[bytes], PiRoot, float]] = {}
    places: dict[str, dict[str, Path]] = {}
    for kind, place in PLACEMENTS.items():
        root = PiRoot(tmp_path / kind)
        root.base.mkdir()
        root.write_config()
        places[kind] = {}
        for agent in agent_names():
            path = session_place(root.base / agent, agent, kind)
            path.parent.mkdir(parents=True, exist_ok=True)
            place(path, agent)
            places[kind][agent] = path
        prefix = _without_read_override() if kind == "unreadable" else []
        if prefix is None:
            print("\nunreadable: root without setpriv here, the mode-000 case is not run")
            continue
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2]), "HOME": str(root.base)}
        child = subprocess.Popen(
            [*prefix, sys.executable, "-c", DRIVER, str(root.config_path)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
            cwd=root.base,
        )  # fmt: skip
        children[kind] = (child, root, time.monotonic())
    results: dict[str, dict[str, Any]] = {}
    failures: list[str] = []
    slowest = 0.0
    for kind, (child, _, started) in children.items():
        try:
            out, err = child.communicate(timeout=DEADLINE_S)
        except subprocess.TimeoutExpired:
            child.kill()
            child.communicate()
            failures.append(f"{kind}: no answer within {DEADLINE_S} s (a hang)")
            continue
        slowest = max(slowest, time.monotonic() - started)
        if child.returncode != 0:
            failures.append(f"{kind}: exit {child.returncode}: {err.decode()[-2000:]}")
            continue
        results[kind] = json.loads(out.decode().strip().splitlines()[-1])
    for kind, found in results.items():
        skipped = {s["path"]: s["reason"] for s in found["skipped"]}
        for agent, path in places[kind].items():
            named = skipped.get(str(path))
            coverage = found["recall"][agent]
            is_db = adapter(agent).database is not None
            indexed = [p for p in found["paths"] if p.startswith(str(path))]
            where = f"{kind} {agent} {path.relative_to(tmp_path)}"
            if is_db or kind == "unreadable":
                # an in-scope source that cannot be read: named, and no answer complete
                if named is None or not named.startswith("source_"):
                    failures.append(f"{where}: status does not name it (skipped: {named})")
                if coverage["complete"]:
                    failures.append(f"{where}: recall --agent {agent} says complete")
            elif kind in ("garbage", "truncated"):
                if not indexed and named is None:
                    failures.append(f"{where}: neither indexed nor named")
            elif kind in ("loop", "symlink", "fifo") and indexed:
                failures.append(f"{where}: a {kind} was indexed: {indexed}")
    agents = len(agent_names())
    print(
        f"\nhostile placements: {len(PLACEMENTS)} kinds x {agents} agent roots "
        f"({sum(adapter(a).database is not None for a in agent_names())} of them session "
        f"databases), slowest child {slowest:.1f} s, {len(failures)} failures"
    )
    assert failures == [], "\n".join(failures)


@pytest.mark.parametrize("agent", agent_names())
def test_every_agent_has_a_place_for_a_session(agent: str) -> None:
    """The placements above need to know where a session of each agent lives: an adapter
    that says it by neither ``files`` nor ``database`` is named here, not skipped."""
    found = adapter(agent)
    assert found.database is not None or found.files.patterns, agent
    place = session_place(Path("/r"), agent, "k")
    assert found.files.holds(str(place)) or found.database is not None, (agent, place)


def test_the_always_on_watcher_lives_beside_hostile_databases(tmp_path: Path) -> None:
    """`pipeline run` over roots whose session database is a fifo, a directory, garbage:
    it comes up, names each, and keeps indexing the sessions around them (a fifo named
    ``opencode.db`` used to block every look at it for ever)."""
    from pipeline.status import collect_status
    from store.config import load_config
    from store.errors import SnapshotMissing
    from tests.doubles import LivePipeline, wait_for
    from tests.helpers import header, user

    root = PiRoot(tmp_path)
    root.write_config()
    kinds = [_fifo, _directory, _garbage, _loop]
    places = {}
    for n, agent in enumerate(a for a in agent_names() if adapter(a).database is not None):
        path = session_place(root.base / agent, agent, "watched")
        path.parent.mkdir(parents=True, exist_ok=True)
        kinds[n % len(kinds)](path, agent)
        places[agent] = path
    pi = root.session("s", [header("s1", "/w"), user("u1", None, "first words", 1)])
    config = load_config(root.config_path)
    live = LivePipeline(root.config_path).start()
    try:
        live.wait_ready(root.index, timeout=60)
        with pi.open("ab") as f:  # an append beside them is indexed: the watcher lives
            f.write(orjson.dumps(user("u2", "u1", "watchedterm later", 2)) + b"\n")

        def found() -> bool:
            from query.engine import Engine

            try:
                with Engine(config) as engine:
                    page = engine.recall({"query": "watchedterm", "scope": "global"}, cwd="/")
            except SnapshotMissing:
                return False  # the first generation is still to come
            return page["total"] == 1

        wait_for(found, timeout=60, what="the append beside hostile databases")
        skipped = {s["path"]: s["reason"] for s in collect_status(config).skipped_sessions}
    finally:
        code = live.stop()
    assert code == 0
    for agent, path in places.items():
        assert skipped.get(str(path)) == "source_unreadable", (agent, path, skipped)
    print(f"\nalways-on beside {len(places)} hostile session databases: alive, each named")
