"""build_session: the records it stores equal the stages run one branch mode at a time."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import blake3
import pytest

from devtools.corpus import generate
from pipeline.session_job import Job, build_session
from stages.digest import SessionFold, ViewInput, build_digest, build_entries, build_shard
from stages.lineage import lineage
from stages.normalize import normalize
from stages.policy import Policy
from stages.read import read_session
from stages.tier import COLD, HOT
from store.codec import decode, encode
from store.layout import IndexLayout
from store.writer import StoreWriter

POLICY = Policy()


@pytest.fixture(scope="module")
def sessions(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, str, bytes]]:
    """Generated Pi, Claude Code and Codex sessions, branched and not."""
    out = tmp_path_factory.mktemp("corpus")
    generate(out, sessions=24, mean_kb=16, seed=11, agents=("pi", "claude", "codex"))
    found = [
        (agent, str(path), path.read_bytes())
        for agent in ("pi", "claude", "codex")
        for path in sorted((out / agent).rglob("*.jsonl"))
    ]
    assert {agent for agent, _, _ in found} == {"pi", "claude", "codex"}
    return found


def _reference(agent: str, path: str, data: bytes, tier: str) -> tuple[bytes, bytes]:
    """Entries and index record bytes with every branch mode normalized on its own."""
    session = read_session(data, path, agent)
    views = [
        ViewInput(lin, normalize(session, lin, POLICY))
        for lin in (lineage(session, "active"), lineage(session, "all"))
    ]
    fold = SessionFold(
        path=path,
        session_id=session.session_id,
        agent=session.agent,
        cwd=session.cwd,
        source_hash=blake3.blake3(data).hexdigest(),
        policy=POLICY.fingerprint(),
        file_reasons=session.reasons,
    )
    record = build_shard(fold, views, POLICY) if tier == HOT else build_digest(fold, views, POLICY)
    return encode(build_entries(fold, views)), encode(record)


@pytest.mark.parametrize("tier", [HOT, COLD])
def test_records_equal_each_branch_mode_normalized_alone(
    sessions: list[tuple[str, str, bytes]], tier: str, tmp_path: Path
) -> None:
    writer = StoreWriter(tmp_path)
    layout = IndexLayout(tmp_path)
    branched = unbranched = 0
    for agent, path, data in sessions:
        built = build_session(
            Job(path, agent, tier, POLICY, str(tmp_path)), data, (1, 2, len(data), 3, 4), writer
        )
        active, every = built.views
        if active.lineage.selected == every.lineage.selected:
            unbranched += 1
        else:
            branched += 1
        entries, index = _reference(agent, path, data, tier)
        assert layout.record_path(built.state.entries_record).read_bytes() == entries
        assert layout.record_path(built.state.index_record).read_bytes() == index
        assert encode(decode(index)) == index
    assert branched and unbranched  # the corpus exercises both paths


def test_normalizing_reads_only_the_selected_records(
    sessions: list[tuple[str, str, bytes]],
) -> None:
    for agent, path, data in sessions:
        session = read_session(data, path, agent)
        for lin in (lineage(session, "active"), lineage(session, "all")):
            other = replace(
                lin,
                branches="all" if lin.branches == "active" else "active",
                leaf_id="elsewhere",
                path_ids=("x",),
                fingerprint="f" * 64,
                reasons=("dangling_parent",),
            )
            assert normalize(session, other, POLICY) == normalize(session, lin, POLICY)


def test_a_message_of_sessions_is_stored_together_or_fails_together(
    sessions: list[tuple[str, str, bytes]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> None:
    import os

    from pipeline import session_job
    from pipeline.session_job import index_sessions

    # the fsync threads end with the test: a later one may fork (pipeline.forked.forkable)
    request.addfinalizer(session_job._SYNC_THREADS.close)

    index = tmp_path / "index"
    jobs = [Job(path, agent, COLD, POLICY, str(index)) for agent, path, _ in sessions[:3]]
    # When the records of the message are made durable, every session's are there
    results = index_sessions(jobs)
    assert all(r.state is not None for r in results)
    layout = IndexLayout(index)
    for r in results:
        assert r.state is not None and r.bytes_written > 0
        assert layout.record_path(r.state.index_record).is_file()
        assert layout.record_path(r.state.entries_record).is_file()

    # When they cannot be (the disk is full), every session of the message fails as
    # disk_full (no fault of theirs: the run stops), none half-stored, no temp file left
    def full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    jobs = [
        Job(path, agent, COLD, POLICY, str(tmp_path / "other")) for agent, path, _ in sessions[:3]
    ]
    failed = index_sessions(jobs)
    assert [(r.state, r.reason) for r in failed] == [(None, "disk_full")] * 3
    assert all("No space left" in (r.error or "") for r in failed)
    left = [p for p in (tmp_path / "other").rglob("*") if p.is_file()]
    assert left == []
