"""memory.sessions: the §1.5 rows (plus agent), newest first, bounded, honest when stale."""

from __future__ import annotations

import re

from tests.helpers import header, user
from tests.unit.query.kit import CWD, T0, Kit


def test_rows_are_newest_first_with_tiers_counts_and_fingerprints(kit: Kit) -> None:
    kit.configure(hotSessions=1)
    new = kit.session(
        "new", [header("n", CWD), user("u", None, "a", T0), user("v", "u", "b", T0)], mtime_s=2000
    )
    kit.session("old", [header("o", CWD), user("u", None, "a", T0)], mtime_s=1000)
    kit.build()
    listing = kit.sessions(scope="project")
    assert listing["scope"] == "project" and listing["branches"] == "active"
    assert "coverage" not in listing
    first, second = listing["sessions"]
    assert first == {
        "id": "pi:n",
        "agent": "pi",
        "file": str(new),
        "cwd": CWD,
        "mtime": 2_000_000,
        "entryCount": 2,
        "tier": "hot",
        "branches": "active",
        "lineageFingerprint": first["lineageFingerprint"],
        "firstPrompt": "a",  # what the person typed first (issue 20)
        "counts": {"prompts": 2, "toolResults": 0, "failed": 0},
    }
    assert second["firstPrompt"] == "a"  # a small cold session is read for it too
    assert re.fullmatch(r"[0-9a-f]{64}", first["lineageFingerprint"])
    assert (second["id"], second["tier"]) == ("pi:o", "cold")
    assert [s["id"] for s in kit.sessions(scope="project", limit=1)["sessions"]] == ["pi:n"]
    assert kit.sessions(scope="project", agent="codex")["sessions"] == []
    assert [s["id"] for s in kit.sessions()["sessions"]] == ["pi:n"]  # scope session
    every = kit.sessions(scope="project", branches="all")["sessions"][0]
    assert every["branches"] == "all" and every["lineageFingerprint"] != first["lineageFingerprint"]


def test_stale_listing_says_so(kit: Kit) -> None:
    path = kit.session("s", [header("s", CWD), user("u", None, "a", T0)])
    kit.build()
    kit.append(path, [user("v", "u", "b", T0 + 1)])
    listing = kit.sessions(scope="project")
    assert listing["coverage"]["staleSessions"] == 1
    assert listing["coverage"]["reasons"] == ["stale_session"]
    amb = kit.sessions(scope="session:nobody")
    assert amb["sessions"] == [] and amb["error"]["code"] == "session_not_found"


def test_rows_carry_the_title_the_agent_recorded_hot_and_cold(kit: Kit) -> None:
    # Given a named session (hot), a cold one past the rows whose entries are read, and one
    # whose first prompt only looks like a title
    kit.configure(hotSessions=1)
    named = {"type": "session_info", "id": "i", "parentId": "u", "name": "parser fix"}
    kit.session("new", [header("n", CWD), user("u", None, "a", T0), named], mtime_s=3000)
    kit.session("plain", [header("p", CWD), user("u", None, "Title: b", T0)], mtime_s=2000)
    for n in range(11):
        renamed = {**named, "name": f"old {n}"}
        kit.session(f"old{n}", [header(f"o{n}", CWD), user("u", None, "c", T0), renamed],
                    mtime_s=1000 - n)  # fmt: skip
    kit.build()
    # When the sessions are listed
    rows = kit.sessions(scope="project", limit=20)["sessions"]
    # Then the title is on the row beside the first prompt, a prompt is never one, and a cold
    # row whose entries were not read still has its title (it is on the session's state)
    assert (rows[0]["title"], rows[0]["firstPrompt"]) == ("parser fix", "a")
    assert "title" not in rows[1] and rows[1]["firstPrompt"] == "Title: b"
    assert "firstPrompt" not in rows[-1] and rows[-1]["title"] == "old 10"
