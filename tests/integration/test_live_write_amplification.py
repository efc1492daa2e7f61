"""Write amplification: a 20 MB hot session grown by 1,000 small entries, one at a time.

Counts every byte the pipeline writes (records, manifests, CURRENT, journal, checkpoints) with
the inline runner, so nothing is missed across processes. The steady state must be a bounded
multiple of the appended bytes, however big the session is; the merge that folds the deltas
once the session goes quiet is reported separately (it rewrites the session's records once).
"""

from __future__ import annotations

import random
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline.runner import InlineRunner
from pipeline.settings import RunSettings
from store.reader import open_snapshot
from tests.doubles import FakeClock
from tests.helpers import PiRoot, assistant, bash, header, jsonl, tool_result, user

T0 = 1_700_000_000_000
WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "theta", "kappa", "sigma"]
# The steady state writes per append: one small delta pair, its share of the tiered
# compactions, a manifest naming the deltas, CURRENT, one journal frame and checkpoints.
BOUND = 60


def text(rng: random.Random, n: int) -> str:
    return " ".join(f"{rng.choice(WORDS)}{rng.randint(0, 999)}" for _ in range(n))


def big_session(path: Path, size: int) -> str:
    rng = random.Random(7)
    path.parent.mkdir(parents=True, exist_ok=True)
    parent = None
    with path.open("wb") as f:
        f.write(jsonl([header("big", "/work/big")]))
        i = 0
        while f.tell() < size:
            i += 1
            eid = f"e{i}"
            kind = i % 4
            if kind == 0:
                r = user(eid, parent, text(rng, 30), T0 + i)
            elif kind == 1:
                call = {"id": f"c{i}", "name": "bash", "arguments": {"command": "ls"}}
                r = assistant(eid, parent, text(rng, 40), T0 + i, call)
            elif kind == 2:
                r = bash(eid, parent, "ls", text(rng, 200), T0 + i)
            else:
                r = tool_result(eid, parent, "read", text(rng, 300), T0 + i)
            f.write(jsonl([r]))
            parent = eid
    return parent or ""


@pytest.fixture
def scratch(tmp_path: Path) -> Iterator[Path]:
    """A tmpfs folder when there is one: this test counts bytes, and thousands of fsyncs on
    a slow disk would only make it take longer."""
    shm = Path("/dev/shm")
    if not (shm.is_dir() and shm.stat().st_mode & 0o002):
        yield tmp_path
        return
    folder = Path(tempfile.mkdtemp(prefix="sessiondex-wa-", dir=shm))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.integration
def test_appending_to_a_20_mb_session_writes_a_bounded_multiple(scratch: Path) -> None:
    pi = PiRoot(scratch)
    config = pi.write_config(hotSessions=5)
    path = pi.root / "--work-big--" / "big.jsonl"
    parent = big_session(path, 20_000_000)
    clock = FakeClock()
    settings = RunSettings(workers=1, reconcile_s=1e9)
    rng = random.Random(11)
    with InlineRunner(config, settings, clock=clock) as runner:
        runner.run_until_idle()
        base = open_snapshot(config.index_dir).session(str(path))
        assert base is not None
        start = runner.written()
        appended = 0
        # When 1,000 small entries are appended one at a time, each seen and published
        for i in range(1000):
            line = jsonl([user(f"n{i}", parent, text(rng, 12), T0 + 10**6 + i)])
            parent = f"n{i}"
            with path.open("ab") as f:
                f.write(line)
            appended += len(line)
            runner.notice(str(path))
            runner.run_until_idle()
            clock.advance(0.5)
        written = {k: v - start[k] for k, v in runner.written().items()}
        steady = sum(written.values())
        counters = runner.worker.engine.counters
        assert (counters.whole, counters.appends, counters.merges) == (1, 1000, 0)
        state = open_snapshot(config.index_dir).session(str(path))
        assert state is not None
        assert state.view("active").entry_count == base.view("active").entry_count + 1000
        # Then, however big the session, the steady state is a bounded multiple of the appends
        ratio = steady / appended
        print(f"\nappended {appended:,} B; steady state wrote {steady:,} B ({ratio:.1f}x)")
        print(f"steady state by kind: {written}")
        print(f"{len(state.index_deltas)} deltas at the end, {counters.compactions} compactions")
        assert ratio < BOUND
        # And once the session goes quiet, one merge folds the deltas into a new base
        before = runner.bytes_written()
        clock.advance(settings.engine.merge_quiet_s + 1)
        runner.run_until_idle()
        merge = runner.bytes_written() - before
        base_bytes = base.index_bytes + base.entries_bytes
        print(f"merge wrote {merge:,} B (the base records were {base_bytes:,} B)")
        assert runner.worker.engine.counters.merges == 1
        merged = open_snapshot(config.index_dir).session(str(path))
        assert merged is not None and not merged.index_deltas
