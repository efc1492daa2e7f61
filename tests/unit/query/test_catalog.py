"""memory.catalog: capability heads from typed fields, in both tiers, bounded and honest."""

from __future__ import annotations

from typing import Any

import pytest

from query.catalog import catalog_for, render_catalog
from query.engine import Engine
from query.errors import InvalidArgument
from query.u16 import json_length
from tests.helpers import assistant, bash, header, tool_result, user
from tests.unit.query.kit import CWD, T0, Kit


def call(name: str, cid: str = "c", **arguments: Any) -> dict[str, Any]:
    return {"id": cid, "name": name, "arguments": arguments}


def corpus(kit: Kit) -> None:
    """A hot session (bash failing twice) and a cold one (a read), both in CWD."""
    kit.configure(hotSessions=1)
    kit.session(
        "hot",
        [
            header("hot", CWD),
            user("u", None, "please grep the read output and write a bash loop", T0),
            assistant("a", "u", "", T0 + 1, call("bash", command="ls")),
            tool_result("r", "a", "bash", "denied", T0 + 2, error=True),
            bash("b", "r", "make", "boom", T0 + 3, exit_code=1),
        ],
        mtime_s=2000,
    )
    kit.session(
        "cold",
        [
            header("cold", CWD),
            user("u", None, "hello", T0),
            assistant("a", "u", "", T0 + 5, call("read", path="x.py")),
            tool_result("r", "a", "read", "content", T0 + 6),
        ],
        mtime_s=1000,
    )


def heads(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        h["ref"] or h["tool"]: h
        for a in result["agents"]
        for p in a["providers"]
        for h in p["heads"]
    }


def test_heads_fold_both_tiers_exactly(kit: Kit) -> None:
    corpus(kit)
    kit.build()
    got = catalog_for(kit.engine, {}, cwd=CWD)
    assert got["scope"] == "project" and got["total"] == 2
    assert got["coverage"]["complete"] is True and got["coverage"]["indexedSessions"] == 2
    [agent] = got["agents"]
    assert (agent["agent"], agent["count"], agent["failures"]) == ("pi", 5, 2)
    assert agent["lastSeen"] == T0 + 6
    [provider] = agent["providers"]
    assert provider["provider"] == "pi"
    assert provider["follow"]["args"]["provider"] == "pi"
    bash_head, read_head = provider["heads"]
    assert {k: bash_head[k] for k in ("action", "tool", "ref", "count", "failures")} == {
        "action": "bash",
        "tool": "bash",
        "ref": "pi.bash",
        "count": 3,
        "failures": 2,
    }
    assert bash_head["outcomes"] == {"failed": 2} and bash_head["lastSeen"] == T0 + 3
    assert (read_head["ref"], read_head["count"], read_head["failures"]) == ("pi.read", 2, 0)
    assert read_head["outcomes"] == {"succeeded": 1} and read_head["sessions"] == 1


def test_prose_never_becomes_a_head(kit: Kit) -> None:
    corpus(kit)
    kit.build()
    got = catalog_for(kit.engine, {"scope": "global"}, cwd=CWD)
    # "grep", "write" and "loop" occur only in user prose.
    assert set(heads(got)) == {"pi.bash", "pi.read"}


def test_each_head_follows_into_recall_of_that_head(kit: Kit) -> None:
    corpus(kit)
    kit.build()
    got = heads(catalog_for(kit.engine, {}, cwd=CWD))
    hot = kit.call(got["pi.bash"]["follow"])
    assert hot["total"] == 3 and {h["ref"] for h in hot["hits"]} == {"pi.bash"}
    cold = kit.call(got["pi.read"]["follow"])
    [candidate] = cold["hits"]
    assert candidate["kind"] == "session" and candidate["matchedStructuralEntries"] == 2


def test_the_answer_is_deterministic_and_cached_per_generation(kit: Kit) -> None:
    corpus(kit)
    kit.build()
    first = catalog_for(kit.engine, {"scope": "global"}, cwd=CWD)
    assert catalog_for(kit.engine, {"scope": "global"}, cwd=CWD) == first
    with Engine(kit.config) as fresh:
        assert catalog_for(fresh, {"scope": "global"}, cwd=CWD) == first


def test_abandoned_branches_count_only_when_asked(kit: Kit) -> None:
    kit.session(
        "s",
        [
            header("s", CWD),
            user("u", None, "start", T0),
            assistant("a1", "u", "", T0 + 1, call("write", path="f")),
            tool_result("r1", "a1", "write", "ok", T0 + 2),
            user("u2", "u", "try again differently", T0 + 3),
        ],
    )
    kit.build()
    assert heads(catalog_for(kit.engine, {}, cwd=CWD)) == {}
    every = catalog_for(kit.engine, {"branches": "all"}, cwd=CWD)
    assert set(heads(every)) == {"pi.write"} and every["branches"] == "all"
    follow = heads(every)["pi.write"]["follow"]
    assert follow["args"]["branches"] == "all"


def test_scope_and_agent_narrow_the_tree(kit: Kit) -> None:
    corpus(kit)
    kit.session(
        "elsewhere",
        [
            header("elsewhere", "/other"),
            user("u", None, "x", T0),
            assistant("a", "u", "", T0 + 1, call("edit", path="y")),
        ],
        cwd="/other",
        mtime_s=3000,
    )
    kit.build()
    assert set(heads(catalog_for(kit.engine, {}, cwd=CWD))) == {"pi.bash", "pi.read"}
    everywhere = catalog_for(kit.engine, {"scope": "global"}, cwd=CWD)
    assert set(heads(everywhere)) == {"pi.bash", "pi.read", "pi.edit"}
    assert heads(everywhere)["pi.edit"]["follow"]["args"]["scope"] == "global"
    one = catalog_for(kit.engine, {"scope": "session:cold"}, cwd=CWD)
    assert set(heads(one)) == {"pi.read"}
    assert catalog_for(kit.engine, {"scope": "global", "agent": "claude"}, cwd=CWD)["agents"] == []
    missing = catalog_for(kit.engine, {"scope": "session:nope"}, cwd=CWD)
    assert missing["error"]["code"] == "session_not_found" and missing["agents"] == []


def test_a_changed_session_makes_coverage_incomplete(kit: Kit) -> None:
    corpus(kit)
    kit.build()
    kit.append(kit.pi.root / "--work-proj--" / "hot.jsonl", [user("z", "b", "later", T0 + 9)])
    got = catalog_for(kit.engine, {}, cwd=CWD)
    assert got["coverage"]["complete"] is False
    assert got["coverage"]["staleSessions"] == 1
    assert got["coverage"]["reasons"] == ["stale_session"]


@pytest.mark.parametrize(
    "args",
    [{"bogus": 1}, {"branches": "some"}, {"agent": "vim"}, {"scope": "nowhere"}, {"cwd": "rel"}],
)
def test_bad_arguments_are_refused(kit: Kit, args: dict[str, Any]) -> None:
    corpus(kit)
    kit.build()
    with pytest.raises(InvalidArgument):
        catalog_for(kit.engine, args, cwd=CWD)


def test_a_huge_catalog_stays_in_the_envelope_least_used_first(kit: Kit) -> None:
    records: list[dict[str, Any]] = [header("s", CWD), user("u", None, "go", T0)]
    parent = "u"
    for i in range(400):
        name = f"tool_number_{i:03d}_with_a_rather_long_name"
        uses = 2 if i == 7 else 1
        for j in range(uses):
            eid = f"a{i}_{j}"
            records.append(assistant(eid, parent, "", T0 + i, call(name, f"c{i}_{j}")))
            parent = eid
    kit.session("s", records)
    kit.build()
    got = catalog_for(kit.engine, {}, cwd=CWD)
    assert json_length(got) <= 30_000
    assert got["total"] == 400 and 0 < got["omittedHeads"] < 400
    kept = heads(got)
    assert len(kept) == 400 - got["omittedHeads"]
    assert "pi.tool_number_007_with_a_rather_long_name" in kept  # the most used survives


def test_text_rendering_names_heads_and_coverage(kit: Kit) -> None:
    corpus(kit)
    kit.build()
    text = render_catalog(catalog_for(kit.engine, {}, cwd=CWD))
    assert "--ref pi.bash" in text and "2 failed" in text
    assert "coverage complete" in text
