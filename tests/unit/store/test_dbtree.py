"""OpenCode < 1.2's ``storage/`` tree read as a database's members (``store.dbtree`` through
``store.dbsource``): ids from paths, canonical bytes, per-session stamps, the owner map a
watcher uses, and sessions a database beside it holds left to the database."""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest

from stages.opencode.adapter import DATABASE
from store.dberrors import MemberTooLarge
from store.dblayout import same_stamp
from store.dbsource import is_superseded, list_members, member_stamp, read_member, superseded
from store.dbtree import OWNERS_MAX, session_of
from tests.opencode_db import OpenCodeDb, text, tool
from tests.opencode_storage import Storage

TREE = DATABASE.trees[0]


def _two(tmp: Path) -> Storage:
    tree = Storage(tmp / "storage")
    for sid in ("ses_a", "ses_b"):
        tree.session(sid, sid)
        tree.user(sid, f"hello from {sid}")
        tree.assistant(sid, text("hi"), tool("bash", {"command": "true"}, exit=0))
    return tree


def test_a_session_is_its_files_as_rows_ids_from_paths(tmp_path: Path) -> None:
    tree = _two(tmp_path)
    data, stamp = read_member(str(tree.root), "ses_a", DATABASE)
    rows = [orjson.loads(line) for line in data.splitlines()]
    assert [r["$table"] for r in rows] == ["session", "message", "message", *["part"] * 4]
    assert rows[0]["id"] == "ses_a" and rows[0]["project_id"] == "prj_1"
    assert rows[0]["data"]["title"] == "ses_a"
    messages = [r for r in rows if r["$table"] == "message"]
    assert [r["session_id"] for r in messages] == ["ses_a", "ses_a"]
    assert [r["id"] for r in messages] == sorted(r["id"] for r in messages)
    parts = [r for r in rows if r["$table"] == "part"]
    assert [r["message_id"] for r in parts] == [messages[0]["id"], *[messages[1]["id"]] * 3]
    assert all(line == orjson.dumps(r, option=orjson.OPT_SORT_KEYS) for line, r in
               zip(data.splitlines(), rows, strict=True))  # fmt: skip
    assert stamp[2] == len(data)
    # the same files, the same bytes
    assert read_member(str(tree.root), "ses_a", DATABASE)[0] == data


def test_the_id_is_the_file_name_not_the_json(tmp_path: Path) -> None:
    """As OpenCode's json-migration.ts: a session moved to another project folder keeps
    a stale ``projectID`` in its JSON; the path is what holds."""
    tree = Storage(tmp_path / "storage")
    tree.session("ses_a", "t")
    moved = tree.root / "session" / "prj_2" / "ses_a.json"
    moved.parent.mkdir()
    (tree.root / "session" / "prj_1" / "ses_a.json").rename(moved)
    data, _ = read_member(str(tree.root), "ses_a", DATABASE)
    head = orjson.loads(data.splitlines()[0])
    assert head["project_id"] == "prj_2" and head["data"]["projectID"] == "prj_1"


def test_a_file_that_is_no_json_is_kept_as_text(tmp_path: Path) -> None:
    tree = _two(tmp_path)
    mid = tree.user("ses_a", "x")
    (tree.root / "message" / "ses_a" / f"{mid}.json").write_bytes(b"{not json")
    rows = [orjson.loads(x) for x in read_member(str(tree.root), "ses_a", DATABASE)[0].splitlines()]
    assert [r["data"] for r in rows if r.get("id") == mid] == ["{not json"]


def test_a_new_part_moves_its_own_sessions_stamp_only(tmp_path: Path) -> None:
    tree = _two(tmp_path)
    before = list_members(str(tree.root), DATABASE)
    assert sorted(before) == ["ses_a", "ses_b"]
    mid = sorted(os.listdir(tree.root / "message" / "ses_a"))[-1].removesuffix(".json")
    tree.tick()
    tree.part("ses_a", mid, text("more"))
    after = list_members(str(tree.root), DATABASE)
    assert not same_stamp(before["ses_a"], after["ses_a"])
    assert same_stamp(before["ses_b"], after["ses_b"])
    one = member_stamp(str(tree.root), "ses_a", DATABASE)
    assert one is not None and same_stamp(one, after["ses_a"])
    assert member_stamp(str(tree.root), "ses_gone", DATABASE) is None
    with pytest.raises(FileNotFoundError):
        read_member(str(tree.root), "ses_gone", DATABASE)


def test_a_session_past_the_limit_is_not_serialized_further(tmp_path: Path) -> None:
    tree = _two(tmp_path)
    with pytest.raises(MemberTooLarge):
        read_member(str(tree.root), "ses_a", DATABASE, limit=100)


def test_sessions_a_database_beside_it_holds_are_left_to_it(tmp_path: Path) -> None:
    tree = _two(tmp_path)
    db = OpenCodeDb(tmp_path / "opencode.db")
    db.session("ses_a", "migrated")
    folder = str(tree.root)
    assert superseded(folder, DATABASE) == {"ses_a"}
    assert sorted(list_members(folder, DATABASE)) == ["ses_b"]
    assert member_stamp(folder, "ses_a", DATABASE) is None
    assert is_superseded(f"{folder}#ses_a", DATABASE)
    assert not is_superseded(f"{folder}#ses_b", DATABASE)
    assert not is_superseded(f"{db.path}#ses_a", DATABASE)  # a database's own member
    with pytest.raises(FileNotFoundError):
        read_member(folder, "ses_a", DATABASE)
    db.path.write_bytes(b"\0" * 4096)  # unreadable: supersedes nothing, the copy answers
    assert sorted(list_members(folder, DATABASE)) == ["ses_a", "ses_b"]


def test_a_changed_file_names_its_session(tmp_path: Path) -> None:
    tree = _two(tmp_path)
    folder = str(tree.root)
    mid = tree.assistant("ses_b", text("x"))
    part = next((tree.root / "part" / mid).iterdir())
    owners: dict[tuple[int, str], str] = {}
    assert session_of(folder, TREE, str(part), owners) == "ses_b"  # found from the folders
    assert owners == {(0, mid): "ses_b"}
    message = tree.root / "message" / "ses_b" / f"{mid}.json"
    owners.clear()
    assert session_of(folder, TREE, str(message), owners) == "ses_b"
    assert owners == {(0, mid): "ses_b"}  # remembered for its parts
    (tree.root / "message" / "ses_b" / f"{mid}.json").unlink()
    assert session_of(folder, TREE, str(part), owners) == "ses_b"  # the map, no stat
    assert session_of(folder, TREE, str(part), {}) is None  # its message is gone
    head = tree.root / "session" / "prj_1" / "ses_a.json"
    assert session_of(folder, TREE, str(head), owners) == "ses_a"
    for other in ("project/prj_1.json", "todo/ses_a.json", "part/x.json", "../x/y/z.json"):
        assert session_of(folder, TREE, str(tree.root / other), owners) is None


def test_the_owner_map_stays_bounded(tmp_path: Path) -> None:
    tree = _two(tmp_path)
    owners = {(0, f"msg_{i}"): "ses_a" for i in range(OWNERS_MAX)}
    message = next((tree.root / "message" / "ses_b").iterdir())
    assert session_of(str(tree.root), TREE, str(message), owners) == "ses_b"
    assert len(owners) <= OWNERS_MAX
