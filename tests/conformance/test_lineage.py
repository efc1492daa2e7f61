"""Sessions, continuations, subagents and branches, as the real writers lay them out."""

from __future__ import annotations

import pytest

from tests.conformance.runs import Runs
from tests.conformance.scenarios import SCENARIOS

pytestmark = pytest.mark.conformance

AGENTS = ("pi", "claude", "codex", "omp", "gemini", "qwen")


@pytest.mark.parametrize("agent", AGENTS)
def test_a_continued_session_is_one_file_and_one_session(runs: Runs, agent: str) -> None:
    key = f"{agent}/resume"
    produced = runs.produced(key)
    assert len(produced.files) == 1, (
        f"{key}: the writer put the continued session in {len(produced.files)} files "
        f"({[p.name for p in produced.files]}); the scenario expects one (append)"
    )
    # (a file the writer left holding no conversation is checked in test_drift)
    left = {str(p) for p in produced.leftovers}
    sessions = [s for s in runs.indexed(key).sessions() if s["file"] not in left]
    assert [s["file"] for s in sessions] == [str(produced.files[0])], (
        f"{key}: indexed sessions {[(s['id'], s['file']) for s in sessions]}"
    )


def test_claude_subagent_is_a_sidechain_session_of_its_parent(runs: Runs) -> None:
    key = "claude/subagent"
    produced = runs.produced(key)
    indexed = runs.indexed(key)
    states = {s.path: s for s in indexed.states()}
    subagent_files = [str(p) for p in produced.files if "/subagents/" in str(p)]
    assert len(subagent_files) == 1, f"{key}: subagent transcripts written: {subagent_files}"
    parent_files = [str(p) for p in produced.files if "/subagents/" not in str(p)]
    side = states.get(subagent_files[0])
    assert side is not None, f"{key}: the subagent transcript is not indexed: {sorted(states)}"
    assert side.sidechain, f"{key}: the subagent transcript is not marked as a sidechain"
    parent = states[parent_files[0]]
    assert not parent.sidechain, f"{key}: the parent transcript is marked as a sidechain"
    assert side.parent_session == parent.session_id, (
        f"{key}: the subagent's parent_session is {side.parent_session!r}, "
        f"expected the parent's session id {parent.session_id!r}"
    )
    words = SCENARIOS[key].sidechain_words
    for word in words:
        hits = indexed.recall(query=word)
        files = {h["follow"]["args"]["session"] for h in hits if h.get("kind") == "entry"}
        assert files == {subagent_files[0]}, (
            f"{key}: {word} is only in the subagent's transcript; recall finds it in {files}"
        )


def test_pi_active_path_equals_pis_own(runs: Runs) -> None:
    """Pi's SessionManager.getBranch() is the truth for which entries are on the active path."""
    branch = runs.pi_branch()
    indexed = runs.indexed("pi/branch")
    (session,) = indexed.sessions()
    ours = [e["entryId"] for e in indexed.entries(session["file"], "active")]
    pis = [e["id"] for e in branch.verdict["branch"] if e["type"] == "message"]
    assert ours == pis, f"pi/branch: our active path {ours} != Pi's getBranch() {pis}"
    every = [e["entryId"] for e in indexed.entries(session["file"], "all")]
    pis_all = [e["id"] for e in branch.verdict["all"] if e["type"] == "message"]
    assert sorted(every) == sorted(pis_all), (
        f"pi/branch: all-branches entries {every} != Pi's message entries {pis_all}"
    )


def test_pi_abandoned_branch_is_found_only_with_all_branches(runs: Runs) -> None:
    indexed = runs.indexed("pi/branch")
    assert not indexed.recall(query="PROMPTABANDONEDQ7"), (
        "pi/branch: the abandoned branch's prompt is found on the active path"
    )
    hits = indexed.recall(query="PROMPTABANDONEDQ7", branches="all")
    assert [h.get("role") for h in hits] == ["user"], (
        f"pi/branch: with branches=all the abandoned prompt must be one user hit: {hits}"
    )


@pytest.mark.parametrize(
    ("word", "edit"), [("PROMPTROOTQ7", "omitted"), ("PROMPTACTIVEQ7", "replaced")]
)
def test_pi_context_edited_entry_stays_searchable_and_says_so(
    runs: Runs, word: str, edit: str
) -> None:
    """A context_edit takes an entry out of the model's context (replacement null) or replaces
    its content there; the raw history keeps it, so recall still finds it by its own words,
    and the entry says how it was edited."""
    branch = runs.pi_branch()
    edits = [e for e in branch.verdict["branch"] if e["type"] == "context_edit"]
    assert len(edits) == 2, f"pi/branch: the SDK script wrote {len(edits)} context_edit entries"
    indexed = runs.indexed("pi/branch")
    hits = indexed.recall(query=word)
    assert [h.get("role") for h in hits] == ["user"], (
        f"pi/branch: the context-edited prompt {word} must stay one searchable user entry: {hits}"
    )
    (session,) = indexed.sessions()
    (entry,) = [e for e in indexed.entries(session["file"]) if word in e.get("text", "")]
    assert entry.get("contextEdited") == edit, (
        f"pi/branch: the prompt {word} was {edit} in the model's context by a context_edit; "
        f"its entry must say so (contextEdited={edit!r}); entry: "
        f"{ {k: v for k, v in entry.items() if k != 'textRange'} }"
    )
