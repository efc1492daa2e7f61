"""A flipped byte in a stored record is found and healed, never answered from.

Before (issue 22, item 9): nothing checked a record against the content address in its
name; a damaged record was decoded as it was (a changed letter in a text, a wrong count),
and only `pipeline rebuild` healed it. Now the first load of a record in a process hashes it
(``store.integrity``), and the pipeline's scrub (``pipeline.scrub``) removes a damaged record
and builds its session again.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from pipeline import scrub
from pipeline.catchup import catch_up as build_index
from query.engine import Engine
from store.integrity import FIRST_LOADS, matches
from store.layout import IndexLayout
from store.reader import open_snapshot
from tests.doubles import LivePipeline, wait_for
from tests.helpers import PiRoot, header, user

T0 = 1_700_000_000_000


def recall(root: PiRoot, term: str) -> dict[str, Any]:
    with Engine(root.write_config()) as engine:
        result: dict[str, Any] = engine.recall({"query": term, "scope": "global"})
    return result


def flip(root: PiRoot, which: str = "entries") -> Path:
    """Flip one bit of the one session's entries (or index) record: the `i` of the stored
    word "numbatflip" when the record holds it plainly, so it reads "numbatflop" (a decodable
    record that says something else: the silent kind of damage), else a byte in the middle."""
    state = open_snapshot(root.index).manifest.sessions[0]
    name = state.entries_record if which == "entries" else state.index_record
    path = IndexLayout(root.index).record_path(name)
    data = bytearray(path.read_bytes())
    at = data.find(b"numbatflip")
    data[at + 8 if at >= 0 else len(data) // 2] ^= ord("i") ^ ord("o") if at >= 0 else 0x01
    os.chmod(path, 0o600)
    path.write_bytes(bytes(data))
    return path


@pytest.fixture
def root(tmp_path: Path) -> PiRoot:
    FIRST_LOADS.forget()  # this process loaded other indexes' records: start afresh
    root = PiRoot(tmp_path)
    root.write_config()
    root.session("s", [header("s", "/w"), user("u1", None, "plain numbatflip words", T0)])
    build_index(root.write_config())
    return root


def test_a_flipped_byte_is_not_answered_from(root: PiRoot) -> None:
    flip(root, "index")
    flip(root, "entries")
    found = recall(root, "numbatflop")  # what the damaged bytes say
    assert found["total"] == 0
    assert found["coverage"]["complete"] is False, "an answer without the session is not complete"


def test_the_scrub_builds_a_damaged_session_again(
    root: PiRoot, monkeypatch: pytest.MonkeyPatch
) -> None:
    damaged = flip(root, "index")
    monkeypatch.setattr(scrub, "SLICES", 1)  # every session's turn on every run
    build_index(root.write_config())
    FIRST_LOADS.forget()
    found = recall(root, "numbatflip")
    assert found["total"] == 1
    assert found["coverage"]["complete"] is True
    assert (
        scrub.damaged(IndexLayout(root.index), open_snapshot(root.index).manifest.sessions[0]) == []
    )
    assert matches(damaged.name, damaged.read_bytes()), "written afresh, not just touched"


def test_each_session_has_its_turn_within_the_slices() -> None:
    paths = [f"/s/{n}.jsonl" for n in range(64)]
    turns = [{p for p in paths if scrub.due(p, now=k * scrub.TURN_S)} for k in range(scrub.SLICES)]
    assert set().union(*turns) == set(paths)
    assert sum(len(t) for t in turns) == len(paths), "each in exactly one turn"


@pytest.mark.integration
def test_pipeline_run_scrubs_a_damaged_record_by_itself(root: PiRoot) -> None:
    flip(root, "entries")
    live = LivePipeline(root.config_path).start()
    try:
        live.wait_ready(root.index, timeout=60)
        wait_for(
            lambda: any(e.get("event") == "session.scrubbed" for e in live.events()),
            timeout=120,
            what="the scrub",
        )
        FIRST_LOADS.forget()
        wait_for(lambda: recall(root, "numbatflip")["total"] == 1, timeout=60, what="the heal")
        state = open_snapshot(root.index).manifest.sessions[0]
        assert scrub.damaged(IndexLayout(root.index), state) == []
    finally:
        assert live.stop() == 0
