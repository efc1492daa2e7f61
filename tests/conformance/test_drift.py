"""No silent drift: every file today's writers write is read whole, and nothing is unknown."""

from __future__ import annotations

import pytest

from store.reasons import NO_ENTRIES
from tests.conformance.runs import Runs
from tests.conformance.scenarios import SCENARIOS

pytestmark = pytest.mark.conformance


@pytest.mark.parametrize("key", list(SCENARIOS))
def test_every_file_written_is_indexed_with_entries(runs: Runs, key: str) -> None:
    produced = runs.produced(key)
    assert produced.files, f"{key}: the writer wrote no session file under {produced.home.sessions}"
    sessions = {s["file"]: s for s in runs.indexed(key).sessions()}
    for path in produced.files:
        found = sessions.get(str(path))
        assert found is not None, f"{key}: {path.name} is not indexed; indexed: {sorted(sessions)}"
        assert found["entryCount"] > 0, f"{key}: {path.name} yields no entries"
    # a file the writer leaves holding no conversation (produce.gemini_resume_leftovers) is
    # indexed too, and says so: no entries, reason no_entries
    states = {s.path: s for s in runs.indexed(key).states()}
    for path in produced.leftovers:
        found = sessions.get(str(path))
        assert found is not None, f"{key}: {path.name} is not indexed; indexed: {sorted(sessions)}"
        assert found["entryCount"] == 0, f"{key}: {path.name} holds no conversation"
        assert NO_ENTRIES in states[str(path)].view("active").reasons, f"{key}: {path.name}"


@pytest.mark.parametrize("key", list(SCENARIOS))
def test_status_says_complete_with_no_reasons(runs: Runs, key: str) -> None:
    status = runs.indexed(key).status()
    produced = runs.produced(key)
    written = len(produced.files) + len(produced.leftovers)
    assert status["indexed"] == status["eligible"] == written, (
        f"{key}: status indexed={status['indexed']} eligible={status['eligible']}, "
        f"files written={written}"
    )
    assert status["incomplete"] == 0 and not status["reasons"], (
        f"{key}: status names incomplete sessions: {status['incompleteSessions']} "
        f"reasons {status['reasons']}"
    )


@pytest.mark.parametrize("key", list(SCENARIOS))
def test_the_pinned_writers_write_no_unknown_record_type(runs: Runs, key: str) -> None:
    """Unknown line/item/block types are counted per writer version (issue 15 point 3); the
    pinned releases must have none left, so every type they write is understood."""
    for state in runs.indexed(key).states():
        unknown = getattr(state, "unknown_records", None)
        assert unknown is not None, (
            f"{key}: SessionState has no unknown_records: unknown record types are not counted "
            "(issue 15 point 3)"
        )
        assert not unknown, (
            f"{key}: {state.path.rsplit('/', 1)[-1]}: the adapter does not know "
            f"{[tuple(u) for u in unknown]} (writer version, type, count)"
        )
