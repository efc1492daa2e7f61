"""The supervisor under faults: a crashing worker, a killed worker, a worker that cannot start.

Faults are injected through ``ProcessSupervisor(target=...)``: the targets below wrap the real
``child_main`` and break one role from inside the child, so the real reporting paths run.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pipeline.children import ChildSpec, Shared, child_main
from tests.doubles import LivePipeline, pid_gone, wait_for
from tests.helpers import PiRoot, header, jsonl, user

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
T0 = 1_700_000_000_000


def crash_once_child(spec: ChildSpec, shared: Shared, conn: Any) -> None:
    """index-0 raises in its first loop while a marker file exists (the marker goes first)."""
    marker = Path(spec.config.index_dir).parent / f"crash-{spec.name}"
    if marker.exists():
        marker.unlink()
        import pipeline.children as children

        def boom(self: object, now: float) -> bool:
            raise RuntimeError("injected crash for the supervisor test")

        children._IndexRole.loop_once = boom  # type: ignore[method-assign]
    child_main(spec, shared, conn)


def broken_publisher_child(spec: ChildSpec, shared: Shared, conn: Any) -> None:
    if spec.role == "publisher":
        import pipeline.children as children

        def boom(self: object, *args: object) -> None:
            raise RuntimeError("injected boot failure for the supervisor test")

        children._PublisherRole.__init__ = boom  # type: ignore[method-assign]
    child_main(spec, shared, conn)


def poison_child(spec: ChildSpec, shared: Shared, conn: Any) -> None:
    """Index workers die (SIGKILL, as from the OOM killer) on a session whose file name
    holds "poison", every time they index it whole."""
    if spec.role == "index":
        import pipeline.engine as engine

        whole = engine.SessionEngine.whole

        def fatal(self: Any, path: str, agent: str, tier: str) -> Any:
            if "poison" in Path(path).name:
                os.kill(os.getpid(), signal.SIGKILL)
            return whole(self, path, agent, tier)

        engine.SessionEngine.whole = fatal  # type: ignore[method-assign]
    child_main(spec, shared, conn)


def drive(config_path: str, fault: str) -> int:
    """Run the supervisor in this (sub)process with a faulty child target."""
    from pipeline.logs import configure_logging
    from pipeline.settings import RunSettings
    from pipeline.supervisor import ProcessSupervisor
    from store.config import load_config

    configure_logging(json=True)
    target = {
        "crash": crash_once_child,
        "boot": broken_publisher_child,
        "poison": poison_child,
    }[fault]
    settings = RunSettings(workers=1, restart_min_s=0.2)
    return ProcessSupervisor(load_config(config_path), settings, target=target).run()


class Driven(LivePipeline):
    """LivePipeline, but through ``drive`` with a fault."""

    def __init__(self, config_path: Path, fault: str) -> None:
        super().__init__(config_path)
        self.fault = fault

    def start(self) -> Driven:
        code = "import sys; from tests.integration.test_live_faults import drive; "
        code += "sys.exit(drive(sys.argv[1], sys.argv[2]))"
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-c", code, str(self.config_path), self.fault],
                cwd=ROOT,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=log,
            )
        return self


@pytest.fixture
def pi(tmp_path: Path) -> PiRoot:
    return PiRoot(tmp_path)


def session(pi: PiRoot) -> Path:
    return pi.session("a", [header("sa", "/w"), user("sa-0", None, "first words", T0)])


def published_term(pi: PiRoot, term: str) -> bool:
    from store.errors import SnapshotMissing
    from store.reader import open_snapshot
    from store.records import HotShard

    try:
        snapshot = open_snapshot(pi.index)
    except SnapshotMissing:
        return False
    return any(
        term in snapshot.load(name, HotShard).view("active").postings
        for s in snapshot.manifest.sessions
        for name in (s.index_record, *s.index_deltas)
    )


def test_a_crashed_worker_is_restarted_and_its_traceback_logged(pi: PiRoot) -> None:
    pi.write_config()
    path = session(pi)
    (pi.base / "crash-index-0").touch()
    live = Driven(pi.config_path, "crash").start()
    try:
        crash = wait_for(
            lambda: next((e for e in live.events() if e.get("event") == "worker.crashed"), None),
            timeout=30,
            what="worker.crashed in the log",
        )
        assert crash["worker"] == "index-0"
        assert "injected crash for the supervisor test" in crash["traceback"]
        assert "Traceback" in crash["traceback"]

        def restarted() -> bool:
            state = live.run_state(pi.index)
            children = {c["name"]: c for c in (state or {}).get("children", [])}
            index = children.get("index-0", {})
            return index.get("restarts") == 1 and index.get("state") == "running"

        wait_for(restarted, timeout=30, what="index-0 restarted")
        # And the restarted group works
        with path.open("ab") as f:
            f.write(jsonl([user("sa-1", "sa-0", "after the restart", T0 + 1)]))
        wait_for(lambda: published_term(pi, "restart"), timeout=20, what="an append published")
        assert live.stop() == 0
    finally:
        if live.process and live.process.poll() is None:
            live.kill()


def test_a_worker_that_cannot_start_stops_the_pipeline_with_a_clear_error(pi: PiRoot) -> None:
    pi.write_config()
    session(pi)
    live = Driven(pi.config_path, "boot").start()
    assert live.process is not None
    assert live.process.wait(60) == 5
    failed = [e for e in live.events() if e.get("event") == "pipeline.boot_failed"]
    assert len(failed) == 1 and failed[0]["worker"] == "publisher"
    assert "injected boot failure for the supervisor test" in failed[0]["traceback"]
    state = live.run_state(pi.index)
    assert state is not None and state["state"] == "failed"
    # Nothing is left running
    wait_for(
        lambda: all(pid_gone(c["pid"]) for c in state["children"] if c["pid"]),
        what="every child gone",
    )


def test_a_worker_killed_from_outside_is_restarted(pi: PiRoot) -> None:
    pi.write_config()
    path = session(pi)
    live = LivePipeline(pi.config_path).start()
    try:
        state = live.wait_ready(pi.index)
        victim = next(c["pid"] for c in state["children"] if c["name"] == "index-0")
        os.kill(victim, signal.SIGKILL)
        crash = wait_for(
            lambda: next((e for e in live.events() if e.get("event") == "worker.crashed"), None),
            timeout=30,
            what="worker.crashed",
        )
        assert crash["cause"].startswith("killed by SIGKILL")
        wait_for(
            lambda: all(
                c["state"] == "running" and c["pid"] != victim
                for c in (live.run_state(pi.index) or {}).get("children", [{}])
            ),
            timeout=30,
            what="the group running again",
        )
        with path.open("ab") as f:
            f.write(jsonl([user("sa-1", "sa-0", "survivor words", T0 + 1)]))
        wait_for(lambda: published_term(pi, "survivor"), timeout=20, what="an append published")
        assert live.stop() == 0
    finally:
        if live.process and live.process.poll() is None:
            live.kill()


def skipped_reason(pi: PiRoot, path: Path) -> str | None:
    from store.errors import SnapshotMissing
    from store.reader import open_snapshot

    try:
        manifest = open_snapshot(pi.index).manifest
    except SnapshotMissing:
        return None
    return next((k.reason for k in manifest.skipped if k.path == str(path)), None)


def test_a_session_that_kills_its_worker_every_time_is_set_aside(pi: PiRoot) -> None:
    pi.write_config()
    healthy = session(pi)
    poison = pi.session("poison", [header("sp", "/w"), user("sp-0", None, "fatal words", T0)])
    live = Driven(pi.config_path, "poison").start()
    try:
        quarantined = wait_for(
            lambda: next(
                (e for e in live.events() if e.get("event") == "session.quarantined"), None
            ),
            timeout=60,
            what="session.quarantined in the log",
        )
        assert quarantined["path"] == str(poison)
        assert quarantined["crashes"] == 2
        assert quarantined["cause"].startswith("killed by SIGKILL")
        # The restarted worker skips it, so the shard moves on: coverage names it, the
        # healthy session is indexed, and later appends are published.
        wait_for(
            lambda: skipped_reason(pi, poison) == "index_error",
            timeout=30,
            what="the poisoned session skipped as index_error",
        )
        with healthy.open("ab") as f:
            f.write(jsonl([user("sa-1", "sa-0", "unblocked words", T0 + 1)]))
        wait_for(lambda: published_term(pi, "unblocked"), timeout=30, what="an append published")
        state = live.run_state(pi.index)
        assert state is not None
        assert [q["path"] for q in state["quarantined"]] == [str(poison)]
        from pipeline.status import collect_status, render_status
        from store.config import load_config

        shown = render_status(collect_status(load_config(pi.config_path)))
        assert f"quarantined {poison}: a worker died on it 2 times (killed by SIGKILL" in shown
        crashes = [e for e in live.events() if e.get("event") == "worker.crashed"]
        assert len(crashes) == 2  # no crash loop
        # A restarted service takes the quarantine back from the run state: the unchanged
        # file costs no more deaths, and the shard still moves.
        assert live.stop() == 0
        live = Driven(pi.config_path, "poison").start()
        wait_for(
            lambda: any(e.get("event") == "quarantine.restored" for e in live.events()),
            timeout=30,
            what="quarantine.restored in the log",
        )
        with healthy.open("ab") as f:
            f.write(jsonl([user("sa-2", "sa-1", "restarted words", T0 + 3)]))
        wait_for(lambda: published_term(pi, "restarted"), timeout=30, what="an append published")
        assert skipped_reason(pi, poison) == "index_error"
        crashes = [e for e in live.events() if e.get("event") == "worker.crashed"]
        assert len(crashes) == 2
        # A changed file gets another chance (and kills a worker again).
        with poison.open("ab") as f:
            f.write(jsonl([user("sp-1", "sp-0", "more words", T0 + 2)]))
        wait_for(
            lambda: len([e for e in live.events() if e.get("event") == "worker.crashed"]) > 2,
            timeout=30,
            what="the changed file retried",
        )
        assert live.stop() == 0
    finally:
        if live.process and live.process.poll() is None:
            live.kill()
