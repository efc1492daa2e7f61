"""Subagent work is part of the session: found under branches=active, marked in hits, expand
and walk, and told apart from a person's prompts with the ``sidechain`` filter."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from query.errors import InvalidArgument
from query.results import Entry, RecallPage, SessionList
from query.walk import drive, steps
from tests.helpers import claude_line, jsonl
from tests.unit.query.kit import CWD, T0, Kit

SID = "c0ffee00-0000-4000-8000-000000000001"


def said(uuid: str, parent: str | None, ms: int, words: str, agent: str | None = None) -> Any:
    kind = "user" if uuid.startswith("u") else "assistant"
    content: object = words if kind == "user" else [{"type": "text", "text": words}]
    line = claude_line(kind, uuid, parent, ms, content, message_id=f"m-{uuid}", cwd=CWD)
    if agent is not None:
        line["isSidechain"] = True
        line["agentId"] = agent
    return line


@pytest.fixture
def claude(kit: Kit) -> Kit:
    folder = kit.pi.base / "claude" / "-work-proj"
    (folder / SID / "subagents").mkdir(parents=True)
    (folder / f"{SID}.jsonl").write_bytes(
        jsonl(
            [
                said("u1", None, T0, "please chase the zebrafish import"),
                said("a1", "u1", T0 + 1, "delegating"),
                said("u2", None, T0 + 2, "inline zebrafish search", agent="inl1"),
                said("a2", "u2", T0 + 3, "inline found it", agent="inl1"),
                said("u3", "a1", T0 + 4, "thanks"),
            ]
        )
    )
    sub = folder / SID / "subagents" / "agent-f1le.jsonl"
    sub.write_bytes(
        jsonl(
            [
                said("u9", None, T0 + 5, "file zebrafish search", agent="f1le"),
                said("a9", "u9", T0 + 6, "nothing else", agent="f1le"),
            ]
        )
    )
    meta = {"agentType": "Explore", "description": "d", "toolUseId": "toolu_7", "spawnDepth": 1}
    (folder / SID / "subagents" / "agent-f1le.meta.json").write_bytes(orjson.dumps(meta))
    kit.build()
    return kit


def texts(page: dict[str, Any]) -> list[str]:
    return sorted(h["snippet"] for h in page["hits"] if h["kind"] == "entry")


def test_subagent_prompts_are_found_under_the_active_branch_and_marked(claude: Kit) -> None:
    page = claude.recall(query="zebrafish", scope="global", role="user")
    assert texts(page) == [
        "file zebrafish search",
        "inline zebrafish search",
        "please chase the zebrafish import",
    ]
    marks = {
        h["snippet"]: (h.get("sidechain"), h.get("agentId"), h.get("parentToolCallId"))
        for h in page["hits"]
    }
    assert marks == {
        "please chase the zebrafish import": (None, None, None),
        "inline zebrafish search": (True, "inl1", None),
        "file zebrafish search": (True, "f1le", "toolu_7"),
    }
    typed = RecallPage.from_dict(page)
    assert sorted(h.sidechain for h in typed.hits if hasattr(h, "sidechain")) == [
        False,
        True,
        True,
    ]


def test_the_sidechain_filter_tells_a_persons_prompt_from_a_subagents(claude: Kit) -> None:
    own = claude.recall(query="zebrafish", scope="global", role="user", sidechain=False)
    assert texts(own) == ["please chase the zebrafish import"]
    theirs = claude.recall(query="zebrafish", scope="global", role="user", sidechain=True)
    assert texts(theirs) == ["file zebrafish search", "inline zebrafish search"]
    both = claude.recall(query="zebrafish", scope="global", role="user", sidechain="any")
    assert len(texts(both)) == 3
    with pytest.raises(InvalidArgument, match="sidechain"):
        claude.recall(query="zebrafish", scope="global", sidechain="yes")


def test_expand_and_walk_carry_the_subagent_marks(claude: Kit) -> None:
    page = claude.recall(query="inline", scope="global", sidechain=True)
    hit = next(h for h in page["hits"] if h["snippet"] == "inline zebrafish search")
    expanded = claude.call(hit["follow"])
    record = expanded["entries"][0]
    assert (record["sidechain"], record["agentId"]) == (True, "inl1")
    seen: list[Entry] = []
    args = dict(hit["follow"]["args"])
    args.pop("indices")
    drive(
        steps(args),
        seen.append,
        expand=lambda a: claude.expand(**a),
        sessions=lambda a: claude.sessions(**a),
    )
    marked = [(e.text, e.agent_id) for e in seen if e.sidechain]
    assert marked == [("inline zebrafish search", "inl1"), ("inline found it", "inl1")]
    assert not any(e.sidechain for e in seen if e.text == "thanks")


def test_the_next_page_keeps_the_sidechain_filter(claude: Kit) -> None:
    page = claude.recall(query="zebrafish", scope="global", sidechain=True, pageSize=1)
    assert page["next"]["args"]["sidechain"] is True
    rest = claude.call(page["next"])
    assert [h.get("sidechain") for h in [*page["hits"], *rest["hits"]]] == [True, True]


def test_the_cli_takes_sidechain_true_false_and_any(
    claude: Kit, capsys: pytest.CaptureFixture[str]
) -> None:
    from query.cli import main

    found = {}
    for value in ("true", "false", "any"):
        argv = ["recall", "zebrafish", "--scope", "global", "--role", "user", "--json"]
        code = main([*argv, "--sidechain", value, "--config", str(claude.pi.config_path)])
        out, _ = capsys.readouterr()
        assert code == 0
        found[value] = texts(orjson.loads(out))
    assert found["false"] == ["please chase the zebrafish import"]
    assert found["true"] == ["file zebrafish search", "inline zebrafish search"]
    assert sorted(found["any"]) == sorted(found["true"] + found["false"])


def test_the_default_session_scope_holds_the_sessions_subagent_files(claude: Kit) -> None:
    page = claude.recall(query="zebrafish", role="user")  # scope: the newest session of the cwd
    assert texts(page) == [
        "file zebrafish search",
        "inline zebrafish search",
        "please chase the zebrafish import",
    ]


def test_a_subagent_file_is_named_by_its_id_as_hits_name_it(claude: Kit) -> None:
    page = claude.recall(query="file", scope="global", sidechain=True)
    hit = next(h for h in page["hits"] if h["snippet"] == "file zebrafish search")
    sid = hit["sessionId"]
    assert sid == f"claude:{SID}/agent-f1le"  # a slash, yet an id, not a path
    for name in (sid, sid.removeprefix("claude:")):
        expanded = claude.expand(session=name, indices=[0])
        assert [e["text"] for e in expanded["entries"]] == ["file zebrafish search"]
        scoped = claude.recall(query="zebrafish", scope=f"session:{name}")
        assert texts(scoped) == ["file zebrafish search"]
    # a path that is no id is still a path, refused outside the roots
    outside = claude.expand(session="/elsewhere/agent-f1le", indices=[0])
    assert outside["error"]["code"] == "session_outside_roots"


def test_cold_digests_answer_the_sidechain_filter_where_every_entry_agrees(claude: Kit) -> None:
    claude.configure(hotSessions=0)  # both files cold: a digest per file
    claude.build()
    # The subagent file is all subagent work, so "a subagent's entry holds the term" needs
    # no hydration there; the main file mixes inline subagent lines with the person's own,
    # so there only hydration can tell which entry holds the term.
    theirs = claude.recall(query="file", scope="global", sidechain=True)
    assert [h["sessionId"] for h in theirs["hits"]] == [f"claude:{SID}/agent-f1le"]
    assert theirs["coverage"]["complete"] is True
    mixed = claude.recall(query="zebrafish", scope="global", sidechain=True)
    assert {h["sessionId"] for h in mixed["hits"]} == {f"claude:{SID}/agent-f1le", f"claude:{SID}"}
    assert "cold_structural_filter_requires_hydration" in mixed["coverage"]["reasons"]
    # the person's own work: the subagent file holds none of it
    own = claude.recall(query="zebrafish", scope="global", sidechain=False)
    assert [h["sessionId"] for h in own["hits"]] == [f"claude:{SID}"]
    assert [h["matchedStructuralEntries"] for h in own["hits"]] == [3]


def test_the_session_list_names_a_subagent_files_parent(claude: Kit) -> None:
    rows = {s["id"]: s for s in claude.sessions(scope="global")["sessions"]}
    child = rows[f"claude:{SID}/agent-f1le"]
    assert (child["sidechain"], child["parentSession"]) == (True, f"claude:{SID}")
    parent = rows[f"claude:{SID}"]
    assert "sidechain" not in parent and "parentSession" not in parent
    typed = {r.id: r for r in SessionList.from_dict(claude.sessions(scope="global")).sessions}
    assert typed[child["id"]].parent_session == f"claude:{SID}"
