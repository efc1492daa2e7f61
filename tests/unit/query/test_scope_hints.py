"""Coverage that does not cry wolf, and scopes that find what a person means (issue 20)."""

from __future__ import annotations

from pathlib import Path

import pytest

from query.render import render
from tests.helpers import header, user
from tests.unit.query.kit import CWD, T0, Kit


def test_project_scope_from_a_subfolder_finds_the_project(kit: Kit) -> None:
    kit.session("s", [header("s", CWD), user("u", None, "the needle", T0)])
    kit.build()
    page = kit.recall(query="needle", scope="project", cwd=CWD + "/src/deep")
    assert [h["sessionId"] for h in page["hits"]] == ["pi:s"]
    # but the home folder or / never make a project of everything below them
    assert kit.recall(query="needle", scope="project", cwd="/work")["hits"] == []


def test_a_version_control_root_marks_the_project(kit: Kit, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "pkg").mkdir()
    kit.session("r", [header("r", str(repo / "pkg")), user("u", None, "needle", T0)])
    kit.build()
    # started in repo/pkg, asked from repo/docs: the same project
    (repo / "docs").mkdir()
    page = kit.recall(query="needle", scope="project", cwd=str(repo / "docs"))
    assert [h["sessionId"] for h in page["hits"]] == ["pi:r"]


def test_an_empty_default_scope_says_what_would_find_more(kit: Kit) -> None:
    kit.session("s", [header("s", CWD), user("u", None, "the needle", T0)])
    kit.build()
    page = kit.recall(query="needle", cwd="/somewhere/else")
    assert page["hits"] == [] and page["coverage"]["complete"]
    assert page["coverage"]["hints"][0]["args"] == {"scope": "global"}
    assert "--scope global" in render("memory.recall", page)
    listing = kit.sessions(cwd="/somewhere/else")
    assert listing["coverage"]["hints"][0]["args"] == {"scope": "global"}
    # a scope that found something, or an explicit global one, gets no hint
    assert "hints" not in kit.recall(query="needle")["coverage"]
    assert "hints" not in kit.recall(query="nothing", scope="global")["coverage"]


@pytest.mark.parametrize("mode", ["literal", "phrase"])
def test_display_cuts_are_a_note_for_literal_search_and_a_gap_for_phrase(
    kit: Kit, mode: str
) -> None:
    kit.configure(maxEntryChars=100, hotSessions=5)
    kit.session("s", [header("s", CWD), user("u", None, "word " * 50 + "needle tail", T0)])
    kit.session("t", [header("t", CWD), user("u", None, "short", T0)], mtime_s=1)
    kit.build()
    page = kit.recall(query="needle tail", queryMode=mode, scope="project")
    coverage = page["coverage"]
    if mode == "literal":
        assert coverage["complete"] and coverage["notes"] == ["max_entry_chars"]
        assert coverage["incompleteSessions"] == 0
        assert "the search read their whole text" in render("memory.recall", page)
    else:  # a phrase is matched on the display text, which was cut: a real gap
        assert not coverage["complete"] and "max_entry_chars" in coverage["reasons"]


def test_status_and_recall_count_the_same_incomplete_sessions(kit: Kit) -> None:
    from pipeline.status import collect_status

    kit.configure(maxEntryChars=100, hotSessions=5)
    kit.session("long", [header("l", CWD), user("u", None, "word " * 50, T0)])
    path = kit.session("broken", [header("b", CWD), user("u", None, "needle", T0)])
    with path.open("ab") as f:
        f.write(b'{"type": "message", "id": \n')  # a complete line that is not JSON
    kit.build()
    status = collect_status(kit.config)
    coverage = kit.recall(query="word", scope="global")["coverage"]
    assert status.incomplete == coverage["incompleteSessions"] == 1
    assert status.display_cut == 1 and coverage["notes"] == ["max_entry_chars"]


def test_an_empty_project_catalog_says_what_would_find_more(kit: Kit) -> None:
    from query.catalog import render_catalog

    kit.session("s", [header("s", CWD), user("u", None, "the needle", T0)])
    kit.build()
    from query.transport import Backend

    with Backend(kit.config, server="off") as backend:
        result = backend.catalog({}, cwd="/somewhere/else")
    assert result["coverage"]["hints"][0]["args"] == {"scope": "global"}
    assert "--scope global" in render_catalog(result)


def test_an_empty_session_scope_points_at_the_project(kit: Kit) -> None:
    kit.session("old", [header("o", CWD), user("u", None, "the needle", T0)], mtime_s=1000)
    kit.session("new", [header("n", CWD), user("u", None, "other words", T0)], mtime_s=2000)
    kit.build()
    page = kit.recall(query="needle")  # the default scope: the newest session only
    assert page["hits"] == []
    first = page["coverage"]["hints"][0]
    assert first["args"] == {"scope": "project"} and "2 sessions" in first["message"]
    assert [h["sessionId"] for h in kit.recall(query="needle", **first["args"])["hits"]] == ["pi:o"]


def test_how_a_session_was_read_is_a_note_not_a_gap(kit: Kit) -> None:
    from pipeline.status import collect_status, render_status

    # Given a session with a line repaired whole (a `\*` escape a redaction tool left), one
    # that never got past its header, and a clean one
    kit.configure(hotSessions=5)
    repaired = kit.session("r", [header("r", CWD), user("u", None, "needle one", T0)])
    with repaired.open("ab") as f:
        f.write(
            b'{"type":"message","id":"v","parentId":"u","timestamp":"2023-11-14T22:13:21Z",'
            b'"message":{"role":"user","content":"needle \\* two"}}\n'
        )
    kit.session("h", [header("h", CWD)])
    kit.session("c", [header("c", CWD), user("u", None, "needle three", T0)])
    kit.build()
    # When recall, sessions and status look at them
    page = kit.recall(query="needle", scope="global")
    coverage = page["coverage"]
    # Then nothing is out of reach, and each answer says how the sessions were read apart
    assert coverage["complete"] and coverage["reasons"] == []
    assert coverage["incompleteSessions"] == 0
    assert coverage["notes"] == ["no_entries", "repaired_line"]
    assert page["total"] == 3  # the repaired line is searched like any other
    assert "coverage complete" in render("memory.recall", page)
    assert "no gap: no_entries, repaired_line" in render("memory.recall", page)
    assert "coverage" not in kit.sessions(scope="global")
    status = collect_status(kit.config)
    assert status.incomplete == 0 and len(status.noted_sessions) == 2
    assert "read        " in render_status(status)
    # while a line lost for good is still a gap
    with repaired.open("ab") as f:
        f.write(b'{"type": "message", "id": \n')
    kit.build()
    coverage = kit.recall(query="needle", scope="global")["coverage"]
    assert not coverage["complete"] and "malformed_line" in coverage["reasons"]
    assert coverage["incompleteSessions"] == 1 == collect_status(kit.config).incomplete
