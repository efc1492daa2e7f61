"""Crash safety: SIGKILL `pipeline run` at 20 random moments while it builds and files grow.

Given a generated corpus of the three agents, a writer appending lines to live sessions the
whole time, and a reader looping over the current generation (loading and hash-checking every
record it names), the pipeline is started and killed with SIGKILL twenty times at random
moments, then started once more and left to go idle. Then:

* the reader never met a missing or torn record,
* no process of a killed pipeline outlived it,
* the index equals a clean `pipeline run --once` of the final files, record for record.
"""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path

import orjson
import pytest

from pipeline.catchup import catch_up
from pipeline.status import collect_status
from store.config import Config
from store.errors import CorruptRecord, SnapshotMissing
from store.reader import open_snapshot
from store.records import ColdDigest, HotShard, SessionEntries
from tests.doubles import LivePipeline, pid_gone, wait_for
from tests.helpers import elsewhere, generated, jsonl, user

pytestmark = pytest.mark.integration

KILLS = 20


class Appender(threading.Thread):
    """Appends one user line every few milliseconds to a handful of Pi sessions."""

    def __init__(self, paths: list[Path], seed: int) -> None:
        super().__init__(daemon=True)
        self.paths = paths
        self.rng = random.Random(seed)
        self.stop = threading.Event()
        self.lines = 0
        self.last = {p: orjson.loads(p.read_bytes().splitlines()[-1]).get("id") for p in paths}

    def run(self) -> None:
        while not self.stop.wait(self.rng.uniform(0.005, 0.05)):
            path = self.rng.choice(self.paths)
            entry_id = f"live-{self.lines}"
            text = f"appended while crashing number {self.lines} marker{self.lines}"
            with path.open("ab") as f:
                f.write(jsonl([user(entry_id, self.last[path], text, 1_800_000_000_000)]))
            self.last[path] = entry_id
            self.lines += 1


class Reader(threading.Thread):
    """Loads every record of the current generation, over and over."""

    def __init__(self, index: Path) -> None:
        super().__init__(daemon=True)
        self.index = index
        self.stop = threading.Event()
        self.rounds = 0
        self.records = 0
        self.errors: list[str] = []

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                snapshot = open_snapshot(self.index)
            except SnapshotMissing:
                time.sleep(0.01)
                continue
            except CorruptRecord as exc:
                self.errors.append(f"manifest: {exc}")
                continue
            for s in snapshot.manifest.sessions:
                kind = HotShard if s.tier == "hot" else ColdDigest
                try:
                    snapshot.load(s.index_record, kind, verify=True)
                    snapshot.load(s.entries_record, SessionEntries, verify=True)
                    for name in s.index_deltas:
                        snapshot.load(name, HotShard, verify=True)
                    for name in s.entries_deltas:
                        snapshot.load(name, SessionEntries, verify=True)
                except CorruptRecord as exc:
                    self.errors.append(f"generation {snapshot.generation}: {exc}")
                self.records += 2 + len(s.index_deltas) + len(s.entries_deltas)
            self.rounds += 1


def corpus(base: Path) -> Config:
    _, config = generated(base, sessions=48, mean_kb=250, seed=5, hot_sessions=12)
    return config


def converged(config: Config) -> bool:
    status = collect_status(config).as_dict()
    if status["pipeline"]["lag"]["events"] or status["stale"] or status["new"]:
        return False
    return not any(s.index_deltas for s in open_snapshot(config.index_dir).manifest.sessions)


def test_sigkill_at_random_moments_converges_to_a_clean_build(tmp_path: Path) -> None:
    config = corpus(tmp_path)
    assert config.path is not None
    rng = random.Random(2024)
    pi_files = sorted((tmp_path / "corpus" / "pi").rglob("*.jsonl"))
    appender = Appender(rng.sample(pi_files, 4), seed=9)
    reader = Reader(config.index_dir)
    appender.start()
    reader.start()
    args = ("--merge-after", "1", "--reconcile-seconds", "5")
    leftovers: list[int] = []
    try:
        for _ in range(KILLS):
            live = LivePipeline(config.path, *args).start()
            time.sleep(rng.uniform(0.2, 2.0))
            state = live.run_state(config.index_dir)
            live.kill()
            if state is not None:
                leftovers += [c["pid"] for c in state["children"] if c.get("pid")]
        appender.stop.set()
        appender.join()
        # The last run is left alone until it has caught up with every file
        live = LivePipeline(config.path, *args).start()
        try:
            wait_for(lambda: converged(config), timeout=90, interval=0.2, what="convergence")
            assert live.stop() == 0
        finally:
            if live.process and live.process.poll() is None:
                live.kill()
    finally:
        appender.stop.set()
        reader.stop.set()
        reader.join(30)
    print(
        f"\n{KILLS} kills; reader: {reader.rounds} rounds, {reader.records} records; "
        f"{appender.lines} lines appended"
    )
    # No reader ever met a missing or torn record, and it did read
    assert reader.errors == []
    assert reader.rounds > 10 and reader.records > 0
    # No process of a killed pipeline outlived it
    wait_for(lambda: all(pid_gone(p) for p in leftovers), what="children of killed runs gone")
    assert appender.lines > 50
    # The index is exactly what a clean build makes of the final files
    other = elsewhere(config, tmp_path / "clean")
    catch_up(other)
    clean = open_snapshot(other.index_dir).manifest
    live_manifest = open_snapshot(config.index_dir).manifest
    assert len(live_manifest.sessions) == len(list((tmp_path / "corpus").rglob("*.jsonl")))
    assert live_manifest.sessions == clean.sessions
    assert live_manifest.skipped == clean.skipped
    for name in clean.records():
        path = Path(name[:2]) / name
        assert (config.index_dir / "records" / path).read_bytes() == (
            other.index_dir / "records" / path
        ).read_bytes()
