"""Live appends against a clean rebuild, after every generation (issue 22, item 5).

Seeded random appends go to Pi, Claude Code and Codex session files through the always-on
engine (``pipeline.engine.SessionEngine.apply``, the worker's own path: tail, in-memory
rederive, delta records, compaction, declines to a whole build), one append event per step
as the watcher makes it. After each step the session's state and its records as a reader
takes them (base + deltas, ``store.deltas``) must equal a clean whole build of the same
bytes into an empty index: the same records give the same answer to every query.

Appends come one event at a time or coalesced two or three to a batch, the hot set is
small (sessions drop out of it and come back by a whole build), and merges run now and then.
The appends include what the fuzz of issue 22 found diverging: a Pi child line written
before its parent, plus branches, repeated ids, lines with no id, malformed and blank
lines, and lines written in two halves. The default budget is ``STEPS``; set
``SESSIONDEX_ATTACKS=full`` for ``FULL_STEPS``. It prints its figures.
"""

from __future__ import annotations

import copy
import os
import random
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import blake3
import orjson
import pytest

from devtools.corpus import AGENTS as CORPUS_AGENTS
from devtools.corpus import generate
from pipeline.catchup import catch_up as build_index
from pipeline.engine import APPEND, EngineSettings, SessionEngine, Upsert
from pipeline.session_job import Job, build_session
from stages.agents import adapter
from stages.policy import Policy
from store.agents import agent_names
from store.codec import decode
from store.deltas import concat_entries, concat_shards
from store.errors import SnapshotMissing
from store.layout import IndexLayout
from store.reader import open_snapshot
from store.records import HotShard, SessionEntries, SessionState, SourceEvent
from tests.doubles import LivePipeline, wait_for
from tests.helpers import PiRoot, assistant, bash, elsewhere, header, tool_result, user

POLICY = Policy(max_entry_chars=120)
T0 = 1_700_000_000_000
STEPS = 300
PI_SESSIONS = 6
FULL_STEPS = 6000
FULL = os.environ.get("SESSIONDEX_ATTACKS") == "full"


class Session:
    """One session file grown by appends, with the engine that follows it."""

    def __init__(self, path: Path, agent: str) -> None:
        self.path = path
        self.agent = agent
        self.state: SessionState | None = None


def event(path: Path, agent: str, start: int) -> SourceEvent:
    data = path.read_bytes()
    st = os.stat(path)
    return SourceEvent(
        APPEND, str(path), agent, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns,
        start, st.st_size, time.time_ns(),
        extra={"hash": blake3.blake3(data).hexdigest(), "ctime_ns": st.st_ctime_ns},
    )  # fmt: skip


def records_of(layout: IndexLayout, state: SessionState) -> tuple[HotShard, SessionEntries]:
    def load(name: str, kind: Any) -> Any:
        return decode(layout.record_path(name).read_bytes(), expect=kind)

    shard = concat_shards([load(n, HotShard) for n in (state.index_record, *state.index_deltas)])
    entries = concat_entries(
        [load(n, SessionEntries) for n in (state.entries_record, *state.entries_deltas)]
    )
    return shard, entries


def differs(live_index: Path, clean_index: Path, s: Session) -> str | None:
    """What the live path's session differs in from a clean build of its bytes (None: same)."""
    assert s.state is not None
    data = s.path.read_bytes()
    st = os.stat(s.path)
    stamp = (st.st_dev, st.st_ino, len(data), st.st_mtime_ns, st.st_ctime_ns)
    job = Job(str(s.path), s.agent, "hot", POLICY, str(clean_index))
    from store.writer import StoreWriter

    clean = build_session(job, data, stamp, StoreWriter(clean_index)).state
    if (s.state.views, s.state.source_hash, s.state.size) != (
        clean.views,
        clean.source_hash,
        clean.size,
    ):
        return f"state: {s.state.views} != {clean.views}"
    shard, entries = records_of(IndexLayout(live_index), s.state)
    clean_shard, clean_entries = records_of(IndexLayout(clean_index), clean)
    if replace(shard, source_hash=clean.source_hash) != clean_shard:
        return "index records differ"
    if replace(entries, source_hash=clean.source_hash) != clean_entries:
        return "entries records differ"
    return None


# -- what the appends write ---------------------------------------------------------------


class PiWriter:
    """Pi lines: mostly a linear chat, sometimes the hostile orders a fuzz found."""

    def __init__(self, rng: random.Random, name: str) -> None:
        self.rng = rng
        self.ids: list[str] = []
        self.n = 0
        self.name = name
        self.held: bytes | None = None  # a parent line still to come after its child

    def first(self) -> bytes:
        return orjson.dumps(header(self.name, "/work")) + b"\n"

    def _id(self) -> str:
        self.n += 1
        return f"{self.name}-{self.n}"

    def _line(self, entry_id: str | None, parent: str | None) -> bytes:
        self.n += 1
        word = f"w{self.rng.randrange(60)} term{self.n} {self.name}"
        kind = self.rng.randrange(4)
        ms = T0 + self.n
        if kind == 0:
            value = user(entry_id or "x", parent, f"asked {word}", ms)
        elif kind == 1:
            value = assistant(entry_id or "x", parent, f"said {word}", ms)
        elif kind == 2:
            value = bash(entry_id or "x", parent, f"echo {word}", "out", ms)
        else:
            value = tool_result(entry_id or "x", parent, "read", f"body {word}", ms)
        value = copy.deepcopy(value)
        if entry_id is None:
            value.pop("id", None)
        return orjson.dumps(value) + b"\n"

    def next(self) -> bytes:
        """The bytes of one append (one or more lines, or part of one)."""
        if self.held is not None:
            out, self.held = self.held, None
            if out.endswith(b"\n") and self.rng.random() < 0.5:
                # the parent, and a child of the node waiting for it, in one append
                entry_id = self._id()
                self.ids.append(entry_id)
                out += self._line(entry_id, self.ids[-2])
            return out
        roll = self.rng.random()
        parent = self.ids[-1] if self.ids else None
        if roll < 0.14 and parent is not None:
            # a child written before its parent: the parent's line comes with the next append
            mid, child = self._id(), self._id()
            self.held = self._line(mid, parent)
            self.ids += [mid, child]
            return self._line(child, mid)
        if roll < 0.18 and self.ids:
            entry_id = self._id()
            self.ids.append(entry_id)
            return self._line(entry_id, self.rng.choice(self.ids[:-1]))  # a branch
        if roll < 0.20 and self.ids:
            return self._line(self.rng.choice(self.ids), parent)  # a repeated id
        if roll < 0.22:
            return self._line(None, parent)  # no id
        if roll < 0.24:
            return b'{"type":"message","id":\n'  # malformed
        if roll < 0.26:
            return b"\n"
        entry_id = self._id()
        self.ids.append(entry_id)
        line = self._line(entry_id, parent)
        if roll < 0.33:
            cut = self.rng.randrange(1, len(line))
            self.held = line[cut:]  # written in two halves
            return line[:cut]
        if roll < 0.45:
            more = self._id()
            self.ids.append(more)
            return line + self._line(more, entry_id)
        return line


class CutWriter:
    """A generated Claude Code or Codex session written in random pieces (mid-line too)."""

    def __init__(self, rng: random.Random, data: bytes) -> None:
        self.rng = rng
        self.data = data
        self.at = 0

    def first(self) -> bytes:
        end = self.data.index(b"\n", len(self.data) // 4) + 1
        self.at = end
        return self.data[:end]

    def next(self) -> bytes:
        if self.at >= len(self.data):
            return b""
        if self.rng.random() < 0.7:
            end = self.data.find(b"\n", self.at) + 1 or len(self.data)
        else:
            end = min(len(self.data), self.at + self.rng.randrange(1, 400))
        out, self.at = self.data[self.at : end], end
        return out


# Pi's own writer (above) also writes Oh My Pi's sessions: the same lines.
PI_WRITTEN = ("pi", "omp")


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, str, bytes]]:
    """(agent, path under the root folder, bytes) of generated sessions of every agent the
    corpus generator writes. A file its adapter reads whole (Aider's history) grows too: each
    append is a whole build there, which must equally give the rebuild's answer."""
    out = tmp_path_factory.mktemp("corpus")
    agents = tuple(a for a in CORPUS_AGENTS if a not in PI_WRITTEN)
    generate(out, sessions=2 * len(agents), mean_kb=10, seed=22, agents=agents)
    found = []
    for agent in agents:
        for path in sorted(p for p in (out / agent).rglob("*") if p.is_file()):
            rel = path.relative_to(out).as_posix()
            if adapter(agent).files.holds(path.relative_to(out / agent).as_posix()):
                found.append((agent, rel, path.read_bytes()))
    return found


def test_every_agent_is_in_a_differential(generated: list[tuple[str, str, bytes]]) -> None:
    """Each registered agent grows in one of the differential fuzzes: here (its generated
    sessions cut anywhere, or Pi's writer), or ``test_databases.py`` (its rows). The next
    agent is covered as soon as the corpus generator writes it, or named here."""
    here = {a for a, _, _ in generated} | set(PI_WRITTEN)
    databases = {a for a in agent_names() if adapter(a).database is not None}
    missing = set(agent_names()) - here - databases
    assert not missing, f"no differential fuzz grows a session of {sorted(missing)}"


def test_live_appends_equal_a_clean_rebuild_after_every_step(
    tmp_path: Path, generated: list[tuple[str, str, bytes]]
) -> None:
    rng = random.Random(22)
    steps = FULL_STEPS if FULL else STEPS
    live_index, clean_root = tmp_path / "live", tmp_path / "clean"
    # a small hot set, so sessions also lose their hot state and come back through a whole
    # build; merges from time to time (``merges_due`` with a clock that jumps)
    clock = [0.0]
    engine = SessionEngine(
        live_index,
        POLICY,
        settings=EngineSettings(hot_capacity=10, merge_quiet_s=20.0),
        clock=lambda: clock[0],
    )
    sessions: list[tuple[Session, Any]] = []
    for n in range(PI_SESSIONS):
        agent = PI_WRITTEN[n % len(PI_WRITTEN)]
        s = Session(tmp_path / agent / f"p{n}.jsonl", agent)
        sessions.append((s, PiWriter(rng, f"p{n}")))
    for agent, rel, data in generated:
        sessions.append((Session(tmp_path / "g" / rel, agent), CutWriter(rng, data)))
    for s, writer in sessions:
        s.path.parent.mkdir(parents=True, exist_ok=True)
        s.path.write_bytes(writer.first())
        change = engine.whole(str(s.path), s.agent, "hot")
        assert isinstance(change, Upsert)
        s.state = change.state
    divergences: list[str] = []
    appends = 0
    merged = 0
    for step in range(steps):
        s, writer = rng.choice(sessions)
        assert s.state is not None
        # one to three appends before the worker reads them: the watcher coalesces events
        events = []
        for _ in range(1 if rng.random() < 0.8 else rng.randrange(2, 4)):
            piece = writer.next()
            if not piece:
                break
            start = events[-1].end if events else s.state.size
            with s.path.open("ab") as f:
                f.write(piece)
            events.append(event(s.path, s.agent, start))
        if not events:
            continue
        appends += len(events)
        clock[0] += rng.random()
        change = engine.apply(str(s.path), s.agent, events, s.state, "hot")
        if isinstance(change, Upsert):
            s.state = change.state
        if rng.random() < 0.02:
            states = {str(x.path): x.state for x, _ in sessions if x.state is not None}
            for path in engine.merges_due(clock[0], states):
                x = next(x for x, _ in sessions if str(x.path) == path)
                merge = engine.merge(path, x.agent, "hot")
                assert isinstance(merge, Upsert)
                x.state = merge.state
                merged += 1
        found = differs(live_index, clean_root / str(step), s)
        if found is not None:
            divergences.append(f"step {step} {s.path.name}: {found}")
    counters = engine.counters.as_dict()
    print(
        f"\ndifferential fuzz: {appends} appends over {len(sessions)} sessions "
        f"({PI_SESSIONS} Pi / Oh My Pi, {len(generated)} of "
        f"{', '.join(sorted({a for a, _, _ in generated}))}), {len(divergences)} divergences "
        f"from a clean rebuild ({merged} merges); engine {counters}"
    )
    assert divergences == [], "\n".join(divergences)
    assert counters["declined"] < appends, "most appends took the live path, not a rebuild"


# -- the same through the running pipeline ------------------------------------------------

E2E_WAVES = 12
DUMP = os.environ.get("SESSIONDEX_DIFF_DUMP")
FULL_E2E_WAVES = 150


def published(index: Path) -> dict[str, SessionState]:
    try:
        return {s.path: s for s in open_snapshot(index).manifest.sessions}
    except SnapshotMissing:
        return {}


def caught_up(index: Path, paths: list[Path]) -> dict[str, SessionState] | None:
    """The published sessions once every file's size is what the generation indexed."""
    states = published(index)
    for p in paths:
        s = states.get(str(p))
        if s is None or s.size != p.stat().st_size:
            return None
    return states


@pytest.mark.integration
def test_the_running_pipeline_equals_a_clean_rebuild_after_every_wave(tmp_path: Path) -> None:
    """Waves of one to three appends to Pi sessions under `pipeline run` (watcher, journal,
    workers, publisher); once a generation holds them, each session's published state and
    records equal those of a clean `run --once` of the same files into another index."""
    rng = random.Random(2022)
    root = PiRoot(tmp_path)
    config = root.write_config()
    writers = [PiWriter(rng, f"e{n}") for n in range(4)]
    paths = []
    for n, w in enumerate(writers):
        folder = root.root / "--w--"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"e{n}.jsonl"
        path.write_bytes(w.first() + w.next() + w.next())
        paths.append(path)
    waves = FULL_E2E_WAVES if FULL else E2E_WAVES
    live = LivePipeline(root.config_path).start()
    divergences: list[str] = []
    appends = 0
    try:
        live.wait_ready(root.index, timeout=60)
        for wave in range(waves):
            for _ in range(rng.randrange(1, 4)):
                n = rng.randrange(len(paths))
                piece = writers[n].next()
                with paths[n].open("ab") as f:
                    f.write(piece)
                appends += 1
                if DUMP:
                    with open(DUMP, "a") as log:
                        log.write(f"{wave} {n} {piece.hex()}\n")
            states = wait_for(lambda: caught_up(root.index, paths), timeout=120, what="catch-up")
            clean = tmp_path / f"clean-{wave}"
            build_index(elsewhere(config, clean))
            rebuilt = published(clean)
            for p in paths:
                a, b = states[str(p)], rebuilt[str(p)]
                if (a.views, a.source_hash) != (b.views, b.source_hash):
                    divergences.append(
                        f"wave {wave} {p.name} (size {a.size}, tail {p.read_bytes()[-150:]!r}): "
                        f"live {a.views} != rebuild {b.views}"
                    )
                    continue
                la, ea = records_of(IndexLayout(root.index), a)
                lb, eb = records_of(IndexLayout(clean), b)
                if replace(la, source_hash="") != replace(lb, source_hash="") or replace(
                    ea, source_hash=""
                ) != replace(eb, source_hash=""):
                    divergences.append(f"wave {wave} {p.name}: records differ")
    finally:
        assert live.stop() == 0
    print(
        f"\ndifferential, running pipeline: {appends} appends in {waves} waves to {len(paths)} "
        f"Pi sessions, {len(divergences)} divergences from a clean rebuild"
    )
    assert divergences == [], "\n".join(divergences)
