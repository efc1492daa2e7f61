"""Oh My Pi sessions through the always-on pipeline: indexed, appended to by the tail path,
re-read whole when omp rewrites its title slot in place, and listed by `pipeline status`."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import orjson

from pipeline.runner import InlineRunner
from pipeline.settings import RunSettings
from pipeline.status import collect_status
from store.agents import agent_names
from store.reader import open_snapshot
from tests.helpers import PiRoot
from tests.unit.pipeline.test_append_pipeline import assert_converged

DATA = Path(__file__).parents[2] / "data" / "omp" / "sessions"
STEM = "2026-05-01T10-00-00-000Z_01966a00-0000-7000-8000-00000000a001"
SETTINGS = RunSettings(workers=1, reconcile_s=3600.0)


def omp_root(pi: PiRoot) -> Path:
    root = pi.base / "omp"
    shutil.copytree(DATA, root)
    return root


def test_omp_sessions_are_indexed_appended_and_rewritten(tmp_path: Path) -> None:
    pi = PiRoot(tmp_path)
    config = pi.write_config()
    root = omp_root(pi)
    main = root / "-work-proj" / f"{STEM}.jsonl"
    with InlineRunner(config, SETTINGS) as runner:
        runner.run_until_idle()
        snapshot = open_snapshot(config.index_dir)
        states = {Path(s.path).name: s for s in snapshot.manifest.sessions}
        assert {s.agent for s in states.values()} == {"omp"}
        assert sorted(states) == sorted(["0-Scout.jsonl", "__advisor.jsonl", main.name])
        assert states["0-Scout.jsonl"].sidechain
        assert states["0-Scout.jsonl"].parent_session == states[main.name].session_id
        assert not states[main.name].sidechain
        before = states[main.name].view("active").entry_count
        # When omp appends a turn, the tail path reads only the new line
        line = {"type": "message", "id": "n1", "parentId": "e027",
                "timestamp": "2026-05-01T10:01:00.000Z",
                "message": {"role": "user", "content": "one more APPENDEDQ9"}}  # fmt: skip
        with main.open("ab") as f:
            f.write(orjson.dumps(line) + b"\n")
        runner.notice(str(main))
        runner.run_until_idle()
        counters = runner.worker.engine.counters
        assert (counters.appends, counters.declined) == (1, 0)
        state = open_snapshot(config.index_dir).session(str(main))
        assert state is not None and state.view("active").entry_count == before + 1
        # When omp renames the session: the 256-byte title slot is rewritten in place
        data = main.read_bytes()
        slot = data[:256]
        renamed = slot.replace(b"Fix the flaky test", b"Flaky test fixed!!", 1)
        assert len(renamed) == 256 and renamed != slot
        stat = main.stat()
        with main.open("r+b") as f:
            f.write(renamed)
        os.utime(main, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # even with mtime restored
        whole = counters.whole
        runner.notice(str(main))
        runner.run_until_idle()
        # Then the session is read whole again, with the same entries
        assert runner.worker.engine.counters.whole == whole + 1
        state = open_snapshot(config.index_dir).session(str(main))
        assert state is not None and state.view("active").entry_count == before + 1
    assert_converged(config, tmp_path)


def test_status_lists_every_registered_agent_with_its_count(tmp_path: Path) -> None:
    pi = PiRoot(tmp_path)
    config = pi.write_config()
    omp_root(pi)
    with InlineRunner(config, SETTINGS) as runner:
        runner.run_until_idle()
    status = collect_status(config).as_dict()
    assert status["agents"] == {name: (3 if name == "omp" else 0) for name in agent_names()}
    assert status["indexed"] == 3
    # the manifest says which files are sessions and where omp keeps a cwd's sessions
    manifest = open_snapshot(config.index_dir).manifest
    assert set(manifest.sources) == set(agent_names())
    assert [f.base for f in manifest.sources["omp"].folders] == ["~", "$TMPDIR", "/"]


def test_an_index_written_before_manifests_named_their_sources_gets_them_once(
    tmp_path: Path,
) -> None:
    from dataclasses import replace

    from pipeline.catchup import catch_up
    from store.writer import StoreWriter

    pi = PiRoot(tmp_path)
    config = pi.write_config()
    omp_root(pi)
    catch_up(config)
    # Given CURRENT as an older release wrote it: no source facts
    old = open_snapshot(config.index_dir).manifest
    StoreWriter(config.index_dir).publish(replace(old, generation=old.generation + 1, sources={}))
    # When the next catch-up run finds no session changed, it still publishes them once
    assert catch_up(config).generations == [old.generation + 2]
    assert open_snapshot(config.index_dir).manifest.sources == old.sources
    # and a rerun then writes nothing
    assert catch_up(config).generations == []
