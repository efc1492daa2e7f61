"""Session databases (OpenCode's ``opencode.db``, Goose's ``sessions.db``) under attack: rows
that grow, change in place and go away while the pipeline follows them, a writer process in a
loop while `pipeline run` runs (killed with SIGKILL once) and queries read, rows of garbage
and rows past ``maxFileBytes``. Every session of a database is a member ``<db>#<id>``
(``store.dbsource``); what must hold:

- after every generation each member's published state and records equal a clean rebuild
  of the same rows (the live path re-derives in memory: it must give the rebuild's answer);
- a reader never sees a torn session: the messages it finds of a session are always the
  first n written to it, and no query raises;
- once the writer stops, `pipeline run` (after its SIGKILL) converges to a clean rebuild;
- garbage in a JSON column is named ``malformed_line``, a session past ``maxFileBytes``
  ``oversized_file``, a session whose id names no member (``odd/id``) ``source_unreadable``
  on its database: no answer over them is ``complete``.

Default budgets are small (``STEPS``, ``WRITES``); ``SESSIONDEX_ATTACKS=full`` runs the fuller
ones. Hostile database files themselves (garbage, a directory, a fifo, locked, …) are placed
by ``test_agent_roots.py``.
"""

from __future__ import annotations

import os
import random
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
import pytest

from pipeline.catchup import catch_up
from pipeline.runner import InlineRunner
from pipeline.settings import RunSettings
from query.engine import Engine
from stages.agents import adapter
from store.agents import agent_names
from store.config import Config, load_config
from store.dblayout import member_path, same_stamp
from store.dbsource import list_members
from store.errors import SnapshotMissing
from store.layout import IndexLayout
from store.reader import open_snapshot
from store.records import SessionState
from tests.doubles import LivePipeline, wait_for
from tests.goose_db import GooseDb, request, response
from tests.goose_db import text as goose_text
from tests.helpers import PiRoot, elsewhere
from tests.opencode_db import OpenCodeDb, text, tool
from tests.reliability.test_differential import records_of

FULL = os.environ.get("SESSIONDEX_ATTACKS") == "full"
STEPS = 240 if FULL else 24
WRITES = 600 if FULL else 60
KILLS = 8 if FULL else 1
SETTINGS = RunSettings(workers=1, reconcile_s=3600.0)
DATABASE_AGENTS = tuple(a for a in agent_names() if adapter(a).database is not None)


def test_every_database_agent_is_attacked_here() -> None:
    """The writers below know OpenCode's and Goose's rows; a new database agent is named."""
    assert set(DATABASE_AGENTS) <= set(WRITERS), (
        f"no row writer for {set(DATABASE_AGENTS) - set(WRITERS)}"
    )


# -- what the fuzz writes -----------------------------------------------------------------


class _RowWriter:
    """One fuzz step of a session database's writer: the first step, and about one in ten,
    opens a session (``open``); any other picks a session and a word and makes one of the
    writer's own moves with them (``move``, by the step's roll)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.sessions: list[str] = []
        self.n = 0

    def step(self) -> str:
        self.n += 1
        roll = self.rng.random()
        if not self.sessions or roll < 0.1:
            sid = self.open(len(self.sessions))
            self.sessions.append(sid)
            return f"session {sid}"
        sid = self.rng.choice(self.sessions)
        word = f"dbword{self.rng.randrange(40)} dbterm{self.n}"
        return self.move(roll, sid, word)

    def open(self, k: int) -> str:
        raise NotImplementedError

    def move(self, roll: float, sid: str, word: str) -> str:
        raise NotImplementedError


class OpenCodeWriter(_RowWriter):
    """OpenCode's own moves: sessions, messages with parts, a tool part finished in place
    (OpenCode writes a running part, then updates it), a title set later, a reverted (deleted)
    message, and rows whose JSON is garbage."""

    def __init__(self, path: Path, rng: random.Random) -> None:
        super().__init__(rng)
        self.db = OpenCodeDb(path)

    def open(self, k: int) -> str:
        return self.db.session(f"ses_{k}", f"title {self.n}")

    def move(self, roll: float, sid: str, word: str) -> str:
        if roll < 0.45:
            self.db.user(sid, f"asked {word}")
            return f"user {sid}"
        if roll < 0.7:
            call = f"c{self.n}"
            running = tool("bash", {"command": f"echo {word}"}, call=call)
            running["state"] = {"status": "running", "input": running["state"]["input"]}
            mid = self.db.assistant(sid, text(f"said {word}"), running)
            if self.rng.random() < 0.7:  # finished in place, as OpenCode does
                done = tool("bash", {"command": f"echo {word}"}, output=word, exit=0, call=call)
                with self.db.connect() as c:
                    c.execute(
                        "UPDATE part SET data = ?, time_updated = ? WHERE message_id = ?"
                        " AND data LIKE '%\"tool\"%'",
                        (orjson.dumps(done).decode(), self.db.tick(), mid),
                    )
            return f"assistant {sid}"
        if roll < 0.8:
            with self.db.connect() as c:
                c.execute(
                    "UPDATE session SET title = ?, time_updated = ? WHERE id = ?",
                    (f"renamed {word}", self.db.tick(), sid),
                )
            return f"title {sid}"
        if roll < 0.88:
            with self.db.connect() as c:  # a revert: the newest message and its parts go
                row = c.execute(
                    "SELECT id FROM message WHERE session_id = ? ORDER BY time_created DESC,"
                    " id DESC LIMIT 1",
                    (sid,),
                ).fetchone()
                if row is not None:
                    c.execute("DELETE FROM part WHERE message_id = ?", row)
                    c.execute("DELETE FROM message WHERE id = ?", row)
                c.execute("UPDATE session SET time_updated = ? WHERE id = ?", (self.db.tick(), sid))
            return f"revert {sid}"
        with self.db.connect() as c:  # garbage in a JSON column
            now = self.db.tick()
            mid = self.db.next_id("msg")
            c.execute(
                "INSERT INTO message VALUES (?, ?, ?, ?, ?)", (mid, sid, now, now, "{not json")
            )
            c.execute(
                "INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)",
                (self.db.next_id("prt"), mid, sid, now, now, '[1, "x"'),
            )
        return f"garbage {sid}"


class GooseWriter(_RowWriter):
    """Goose's moves: sessions, user and assistant messages, tool requests and responses,
    a session renamed, and content that is no JSON."""

    def __init__(self, path: Path, rng: random.Random) -> None:
        super().__init__(rng)
        self.db = GooseDb(path)

    def open(self, k: int) -> str:
        return self.db.session(f"2026_{k}", f"name {self.n}")

    def move(self, roll: float, sid: str, word: str) -> str:
        if roll < 0.45:
            self.db.message(sid, "user", goose_text(f"asked {word}"))
        elif roll < 0.75:
            call = f"call{self.n}"
            shell = request(call, "developer__shell", {"command": f"echo {word}"})
            self.db.message(sid, "assistant", goose_text(f"said {word}"), shell)
            self.db.message(sid, "user", response(call, word))
        elif roll < 0.85:
            # as Goose renames (``updated_at`` counts whole seconds: often it does not move)
            self.db._write(
                "UPDATE sessions SET name = ?, updated_at = datetime('now') WHERE id = ?",
                (f"renamed {word}", sid),
            )
        else:
            self.db._write(
                "INSERT INTO messages (session_id, role, content_json, created_timestamp,"
                " metadata_json) VALUES (?, 'user', '{not json', ?, 'nope')",
                (sid, self.db.clock + 1),
            )
            self.db.clock += 1
        return f"message {sid}"


WRITERS: dict[str, Any] = {"opencode": OpenCodeWriter, "goose": GooseWriter}


def _db_path(base: Path, agent: str) -> Path:
    layout = adapter(agent).database
    assert layout is not None
    return base / agent / layout.file.replace("*", "")


# -- the live path against a rebuild ------------------------------------------------------


def published(index: Path) -> dict[str, SessionState]:
    try:
        return {s.path: s for s in open_snapshot(index).manifest.sessions}
    except SnapshotMissing:
        return {}


def diverging(live: Config, clean_dir: Path, members: list[str]) -> list[str]:
    """Members whose published state or records differ from a clean `run --once`."""
    catch_up(elsewhere(live, clean_dir), processes=1)
    ours, theirs = published(live.index_dir), published(clean_dir)
    out = []
    for path in members:
        a, b = ours.get(path), theirs.get(path)
        if a is None or b is None:
            if (a is None) != (b is None):
                out.append(f"{path}: live {a is not None}, rebuild {b is not None}")
            continue
        if (a.views, a.source_hash, a.size) != (b.views, b.source_hash, b.size):
            out.append(f"{path}: state live {a.views} != rebuild {b.views}")
            continue
        la, ea = records_of(IndexLayout(live.index_dir), a)
        lb, eb = records_of(IndexLayout(clean_dir), b)
        if replace(la, source_hash="") != replace(lb, source_hash="") or replace(
            ea, source_hash=""
        ) != replace(eb, source_hash=""):
            out.append(f"{path}: records differ")
    return out


@pytest.mark.parametrize("agent", DATABASE_AGENTS)
def test_a_growing_database_equals_a_clean_rebuild_after_every_generation(
    tmp_path: Path, agent: str
) -> None:
    rng = random.Random(f"22-{agent}")
    config = PiRoot(tmp_path).write_config()
    db = _db_path(tmp_path, agent)
    writer = WRITERS[agent](db, rng)
    layout = adapter(agent).database
    assert layout is not None
    divergences: list[str] = []
    moves: dict[str, int] = {}
    with InlineRunner(config, SETTINGS) as runner:
        runner.run_until_idle()
        for step in range(STEPS):
            for _ in range(1 if rng.random() < 0.7 else rng.randrange(2, 4)):
                move = writer.step()
                moves[move.split()[0]] = moves.get(move.split()[0], 0) + 1
            runner.notice(str(db) + "-wal")  # what the observer sees of a WAL write
            runner.run_until_idle()
            members = [member_path(str(db), i) for i in list_members(str(db), layout)]
            found = diverging(config, tmp_path / f"clean-{step}", members)
            divergences += [f"step {step}: {d}" for d in found]
        counters = runner.worker.engine.counters.as_dict()
    print(
        f"\ndifferential, {agent} database: {STEPS} generations, moves {moves}, "
        f"{len(divergences)} divergences from a clean rebuild; engine {counters}"
    )
    assert divergences == [], "\n".join(divergences)


# -- a writer process, `pipeline run`, SIGKILL and readers --------------------------------

WRITER = r"""
import random, sqlite3, sys, time
import orjson
path, writes, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(seed)
sessions = ["ses_w0", "ses_w1"]
seq = {s: 0 for s in sessions}
clock = 1_767_100_000_000
for n in range(writes):
    if n == writes // 3:
        sessions.append("ses_w2")
        seq["ses_w2"] = 0
        db = sqlite3.connect(path)
        with db:
            db.execute(
                "INSERT INTO session (id, project_id, slug, directory, title, version,"
                " time_created, time_updated) VALUES ('ses_w2', 'prj_1', 'w2', '/work/proj',"
                " 'third', '1.2.27', ?, ?)", (clock, clock))
        db.close()
    sid = rng.choice(sessions)
    clock += 1000
    k = seq[sid]
    seq[sid] += 1
    info = {"role": "user", "agent": "build", "model": {"providerID": "p", "modelID": "m"},
            "time": {"created": clock}}
    part = {"type": "text", "text": f"walcommon walsess{sid[-1]} seq{k:04d}"}
    db = sqlite3.connect(path, timeout=10)
    with db:
        db.execute("INSERT INTO message VALUES (?, ?, ?, ?, ?)",
                   (f"msg_w{n:06d}", sid, clock, clock, orjson.dumps(info).decode()))
        db.execute("INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)",
                   (f"prt_w{n:06d}", f"msg_w{n:06d}", sid, clock, clock,
                    orjson.dumps(part).decode()))
        db.execute("UPDATE session SET time_updated = ? WHERE id = ?", (clock, sid))
    if n % 25 == 24:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # a new log: new salts
    db.close()
    time.sleep(0.01 + rng.random() * 0.04)
print(orjson.dumps(seq).decode())
"""
SEQ = re.compile(r"walcommon walsess(\d) seq(\d{4})")


class Reader(threading.Thread):
    """Recalls in a loop; what it finds of each session must be a prefix of its writes."""

    def __init__(self, config_path: Path) -> None:
        super().__init__(daemon=True)
        self.config_path = config_path
        self.stop = threading.Event()
        self.answers = 0
        self.torn: list[str] = []
        self.errors: list[str] = []

    def run(self) -> None:
        while not self.stop.is_set():
            for n in range(3):
                try:
                    with Engine(load_config(self.config_path)) as engine:
                        page = engine.recall(
                            {"query": f"walsess{n}", "scope": "global", "agent": "opencode",
                             "pageSize": 50, "snippetChars": 200},
                            cwd="/",
                        )  # fmt: skip
                except SnapshotMissing:
                    continue
                except Exception as exc:  # noqa: BLE001 - every failure is a finding
                    self.errors.append(f"{type(exc).__name__}: {exc}")
                    continue
                self.answers += 1
                seen = {int(k) for h in page["hits"] for _, k in SEQ.findall(h.get("snippet", ""))}
                # messages k found means 0..k were written before it, so indexed with it: the
                # answer holds at least k+1 of them, and all of them when it is one page
                if seen and (
                    page["total"] < max(seen) + 1
                    or (page.get("next") is None and seen != set(range(len(seen))))
                ):
                    self.torn.append(f"walsess{n}: total {page['total']}, {sorted(seen)}")
            time.sleep(0.05)


def test_a_writer_process_pipeline_run_sigkill_and_readers_converge(tmp_path: Path) -> None:
    config = PiRoot(tmp_path).write_config()
    path = _db_path(tmp_path, "opencode")
    db = OpenCodeDb(path)
    for sid in ("ses_w0", "ses_w1"):
        db.session(sid, sid)
    layout = adapter("opencode").database
    assert layout is not None
    live = LivePipeline(tmp_path / "config.toml").start()
    reader = Reader(tmp_path / "config.toml")
    writer: subprocess.Popen[bytes] | None = None
    killed = 0
    try:
        live.wait_ready(config.index_dir, timeout=60)
        writer = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), str(WRITES), "22"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        started = time.monotonic()
        reader.start()
        # SIGKILL the pipeline mid-write at random moments, each time starting it again
        moments = random.Random(22)
        for _ in range(KILLS):
            time.sleep(moments.uniform(0.2, 0.8))
            if writer.poll() is not None:
                break
            os.kill(live.pid, signal.SIGKILL)
            assert live.process is not None
            live.process.wait(30)
            killed += 1
            live = LivePipeline(tmp_path / "config.toml").start()
        out, err = writer.communicate(timeout=300)
        assert writer.returncode == 0, err.decode()
        seq: dict[str, int] = orjson.loads(out.splitlines()[-1])
        written = time.monotonic() - started

        def converged() -> dict[str, SessionState] | None:
            states = published(config.index_dir)
            for sid, stamp in list_members(str(path), layout).items():
                state = states.get(member_path(str(path), sid))
                if state is None or not same_stamp(state.stamp, stamp):
                    return None
            return states

        wait_for(converged, timeout=120, interval=0.2, what="the pipeline catching up")
        settled = time.monotonic() - started - written
    finally:
        reader.stop.set()
        if reader.is_alive():
            reader.join(60)
        code = live.stop()
        if writer is not None and writer.poll() is None:
            writer.kill()
            writer.wait()
    assert code == 0
    members = [member_path(str(path), sid) for sid in seq]
    divergences = diverging(config, tmp_path / "clean", members)
    with Engine(config) as engine:
        final = engine.recall(
            {"query": "walcommon", "scope": "global", "agent": "opencode"}, cwd="/"
        )
    print(
        f"\nwriter process + pipeline run: {WRITES} messages to {len(seq)} sessions in "
        f"{written:.1f} s, {killed} SIGKILL, settled {settled:.1f} s after; reader "
        f"{reader.answers} answers, {len(reader.torn)} torn, {len(reader.errors)} errors; "
        f"{len(divergences)} divergences from a clean rebuild"
    )
    assert killed >= 1, "the writer ended before the pipeline could be killed mid-write"
    assert reader.errors == [], reader.errors[:5]
    assert reader.torn == [], reader.torn[:5]
    assert reader.answers > 0
    assert divergences == [], divergences
    assert final["coverage"]["complete"], final["coverage"]
    assert final["total"] == WRITES


# -- rows the adapter cannot take ---------------------------------------------------------


@pytest.mark.parametrize("agent", DATABASE_AGENTS)
def test_garbage_rows_and_rows_past_max_file_bytes_are_named(tmp_path: Path, agent: str) -> None:
    base = PiRoot(tmp_path)
    base.write_config()
    text_ = base.config_path.read_text().replace(
        "[sources]\n", "[sources]\nmaxFileBytes = 1048576\n"
    )
    base.config_path.write_text(text_)
    config = load_config(base.config_path)
    path = _db_path(tmp_path, agent)
    writer = WRITERS[agent](path, random.Random(1))
    writer.step()  # a session
    sid = writer.sessions[0]
    huge = "rowterm " + "y" * 1_200_000
    if agent == "opencode":
        writer.db.user(sid, "rowterm fine")
        garbage = "UPDATE message SET data = '{not json' WHERE session_id = ?"
        big = writer.db.session("ses_big", "big")
        writer.db.user(big, huge)
    else:
        writer.db.message(sid, "user", goose_text("rowterm fine"))
        garbage = "UPDATE messages SET content_json = '{not json' WHERE session_id = ?"
        big = writer.db.session("big", "big")
        writer.db.message(big, "user", goose_text(huge))
    c = sqlite3.connect(path)
    with c:
        c.execute(garbage, (sid,))
    c.close()
    odd = writer.db.session("odd/id", "an id no member path can carry")
    if agent == "opencode":
        writer.db.user(odd, "rowterm odd")
    else:
        writer.db.message(odd, "user", goose_text("rowterm odd"))
    catch_up(config, processes=1)
    with Engine(config) as engine:
        page = engine.recall({"query": "rowterm", "scope": "global", "agent": agent}, cwd="/")
    assert member_path(str(path), sid) in published(config.index_dir)  # indexed, named
    assert page["coverage"]["complete"] is False
    reasons = {"malformed_line", "oversized_file", "source_unreadable"}
    assert reasons <= set(page["coverage"]["reasons"]), page


# -- a writer holding the lock -------------------------------------------------------------

HOLD = r"""
import sqlite3, sys, time
path, table, key, mode = sys.argv[1:5]
c = sqlite3.connect(path, isolation_level=None)
c.execute(f"PRAGMA journal_mode = {'WAL' if mode == 'wal' else 'DELETE'}")
if mode == "wal":
    c.execute("PRAGMA locking_mode = EXCLUSIVE")  # readers of its log wait too
c.execute("BEGIN EXCLUSIVE")
c.execute(f'UPDATE "{table}" SET "{key}" = "{key}"')  # a pending write: a hot journal
print("held", flush=True)
time.sleep(120)
"""


# every agent in both modes with the fuller budget; by default each agent in one of them
LOCK_CASES = [
    (agent, mode)
    for n, agent in enumerate(DATABASE_AGENTS)
    for mode in ("rollback", "wal")
    if FULL or mode == ("rollback", "wal")[n % 2]
]


@pytest.mark.parametrize(("agent", "mode"), LOCK_CASES)
def test_a_database_locked_by_a_writer_is_named_and_nothing_waits_long(
    tmp_path: Path, agent: str, mode: str
) -> None:
    """A writer holds an EXCLUSIVE transaction with a write pending (rollback journal), or
    keeps its WAL database in exclusive locking mode: `run --once` and recall name the
    database (never ``complete``) within a few busy timeouts, and once it lets go the
    answer is complete again."""
    config = PiRoot(tmp_path).write_config()
    path = _db_path(tmp_path, agent)
    writer = WRITERS[agent](path, random.Random(3))
    for _ in range(6):
        writer.step()
    catch_up(config, processes=1)
    layout = adapter(agent).database
    assert layout is not None
    first = layout.tables[0]
    hold = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(path), first.name, first.key, mode],
        stdout=subprocess.PIPE,
    )  # fmt: skip
    try:
        assert hold.stdout is not None and hold.stdout.readline() == b"held\n"
        started = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-m", "pipeline", "run", "--once", "--config",
             str(tmp_path / "config.toml")],
            capture_output=True, timeout=120,
        )  # fmt: skip
        once = time.monotonic() - started
        assert done.returncode == 0, done.stderr[-2000:]
        started = time.monotonic()
        with Engine(config) as engine:
            page = engine.recall({"query": "dbword1", "scope": "global", "agent": agent}, cwd="/")
        recall_s = time.monotonic() - started
    finally:
        hold.kill()
        hold.communicate()
    assert page["coverage"]["complete"] is False
    assert {"source_unreadable", "source_unavailable"} & set(page["coverage"]["reasons"]), page
    catch_up(config, processes=1)
    with Engine(config) as engine:
        after = engine.recall({"query": "dbword1", "scope": "global", "agent": agent}, cwd="/")
    assert after["coverage"]["complete"], after["coverage"]
    print(
        f"\n{agent} locked ({mode}): run --once {once:.1f} s, recall {recall_s:.1f} s, "
        f"reasons {page['coverage']['reasons']}; released: complete"
    )
    # a query waits QUERY_BUSY_MS (250 ms) a look, one look per database: not 2 s per session
    assert recall_s < 3, recall_s
