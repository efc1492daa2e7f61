"""Acceptance: with `pipeline run` on a generated corpus, an appended entry is recallable fast.

A three-agent corpus from ``devtools.corpus``; the pipeline is started and left to go idle
(status: lag 0). Then entries are appended one at a time, to Pi sessions (the delta path) and
Claude Code sessions (rebuilt whole on every append), each carrying a word nobody used before,
and each must come back from ``query recall`` in the global scope. The time from the append to
the published index is printed; the median must stay under the one-second target (each one
is only required to arrive within a generous deadline, so a loaded machine cannot flake it).
Then SIGKILL, more appends while down, a restart: nothing is lost, and the index converges to
a clean `pipeline run --once`.
"""

from __future__ import annotations

import statistics
import time
import uuid
from pathlib import Path
from typing import Any

import orjson
import pytest

from pipeline.catchup import catch_up
from pipeline.status import collect_status
from query.client import Memory
from store.config import Config
from store.reader import open_snapshot
from store.records import HotShard
from tests.doubles import LivePipeline, wait_for
from tests.helpers import elsewhere, generated, jsonl, user

pytestmark = pytest.mark.integration


def corpus(base: Path) -> Config:
    _, config = generated(base, sessions=30, mean_kb=120, seed=11, hot_sessions=40)
    return config


def last_json(path: Path) -> dict[str, Any]:
    value: dict[str, Any] = orjson.loads(path.read_bytes().splitlines()[-1])
    return value


def pi_line(path: Path, word: str) -> bytes:
    parent = last_json(path).get("id")
    return jsonl([user(f"acc-{word}", parent, f"remember the {word} decision", 1_800_000_000_000)])


def claude_line(path: Path, word: str) -> bytes:
    last = last_json(path)
    record = {
        "parentUuid": last.get("uuid"),
        "isSidechain": False,
        "type": "user",
        "message": {"role": "user", "content": f"remember the {word} decision"},
        "uuid": str(uuid.uuid4()),
        "timestamp": "2026-06-01T10:00:00.000Z",
        "userType": "external",
        "cwd": last.get("cwd", "/w"),
        "sessionId": last.get("sessionId", "s"),
        "version": last.get("version", "2.1.77"),
    }
    return orjson.dumps(record) + b"\n"


def published(config: Config, path: Path, word: str) -> bool:
    """True when *word* is in the published postings of *path* (base record or a delta)."""
    snapshot = open_snapshot(config.index_dir)
    state = snapshot.session(str(path))
    if state is None or state.tier != "hot":
        return False
    return any(
        word in snapshot.load(name, HotShard).view("active").postings
        for name in (state.index_record, *state.index_deltas)
    )


def recalled(memory: Memory, word: str) -> bool:
    page = memory.recall(query=word, scope="global")
    return bool(page.hits)


def idle(config: Config) -> bool:
    status = collect_status(config).as_dict()
    return not (status["pipeline"]["lag"]["events"] or status["stale"] or status["new"])


def test_an_appended_entry_is_recalled_within_a_second(tmp_path: Path) -> None:
    config = corpus(tmp_path)
    assert config.path is not None
    root = tmp_path / "corpus"
    pi_files = sorted((root / "pi").rglob("*.jsonl"))[:3]
    claude_files = [
        p for p in sorted((root / "claude").rglob("*.jsonl")) if "subagents" not in p.parts
    ][:2]
    memory = Memory(config, server="off")
    live = LivePipeline(config.path, "--merge-after", "2").start()
    try:
        live.wait_ready(config.index_dir)
        wait_for(lambda: idle(config), timeout=60, interval=0.1, what="the first build")
        latencies: list[float] = []
        for n in range(10):
            path = (pi_files + claude_files)[n % 5]
            word = f"zqx{n}acceptance"
            line = (pi_line if "pi" in path.relative_to(root).parts[:1] else claude_line)(
                path, word
            )
            with path.open("ab") as f:
                f.write(line)
            written = time.monotonic()
            wait_for(
                lambda p=path, w=word: published(config, p, w),
                timeout=15,
                interval=0.005,
                what=f"{word} published",
            )
            latencies.append(time.monotonic() - written)
            assert recalled(memory, word)
        print(
            "\nappend → published, seconds: "
            + ", ".join(f"{t:.3f}" for t in latencies)
            + f" (median {statistics.median(latencies):.3f})"
        )
        assert statistics.median(latencies) < 1.0
        wait_for(lambda: idle(config), timeout=30, what="lag 0 once idle")
        assert collect_status(config).as_dict()["pipeline"]["lag"]["events"] == 0
        # SIGKILL, appends while down, a restart: nothing is lost
        live.kill()
        late = "zqxlateacceptance"
        with pi_files[0].open("ab") as f:
            f.write(pi_line(pi_files[0], late))
        live = LivePipeline(config.path, "--merge-after", "1").start()
        wait_for(lambda: recalled(memory, late), timeout=30, what="the append made while down")

        def settled() -> bool:
            sessions = open_snapshot(config.index_dir).manifest.sessions
            return idle(config) and not any(s.index_deltas for s in sessions)

        wait_for(settled, timeout=60, interval=0.1, what="merged and idle")
        assert live.stop() == 0
    finally:
        if live.process and live.process.poll() is None:
            live.kill()
    other = elsewhere(config, tmp_path / "clean")
    catch_up(other)
    assert open_snapshot(config.index_dir).manifest.sessions == (
        open_snapshot(other.index_dir).manifest.sessions
    )
