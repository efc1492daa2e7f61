"""Sessions inside one SQLite file, read as files of their own (``store.dbsource``): canonical
bytes, per-session stamps, read-only opening that leaves no side files, and clear errors."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import orjson
import pytest

from pipeline.discovery import discover
from stages.opencode.adapter import DATABASE
from store.dblayout import DbLayout, DbTable, member_path, same_stamp, split_member
from store.dbsource import DbUnreadable, MemberTooLarge, list_members, member_stamp, read_member
from store.reasons import SOURCE_UNREADABLE
from tests.opencode_db import OpenCodeDb, text, tool


def _two(tmp: Path) -> OpenCodeDb:
    db = OpenCodeDb(tmp / "opencode.db")
    for sid in ("ses_a", "ses_b"):
        db.session(sid, sid)
        db.user(sid, f"hello from {sid}")
        db.assistant(sid, text("hi"), tool("bash", {"command": "true"}, exit=0))
    return db


def test_a_member_is_its_rows_one_canonical_object_a_line(tmp_path: Path) -> None:
    db = _two(tmp_path)
    data, stamp = read_member(str(db.path), "ses_a", DATABASE)
    rows = [orjson.loads(line) for line in data.splitlines()]
    assert [r["$table"] for r in rows] == [
        "session",
        "message",
        "message",
        "part",
        "part",
        "part",
        "part",
    ]
    assert all(r.get("session_id", r.get("id")) == "ses_a" for r in rows)
    assert isinstance(rows[1]["data"], dict)  # JSON columns are parsed
    assert data == b"".join(orjson.dumps(r, option=orjson.OPT_SORT_KEYS) + b"\n" for r in rows)
    assert read_member(str(db.path), "ses_a", DATABASE) == (data, stamp)  # the same bytes again
    assert stamp[2] == len(data) and stamp[1] == db.path.stat().st_ino


def test_a_new_message_moves_its_own_sessions_stamp_only(tmp_path: Path) -> None:
    db = _two(tmp_path)
    before = list_members(str(db.path), DATABASE)
    assert sorted(before) == ["ses_a", "ses_b"]
    db.user("ses_a", "one more")
    after = list_members(str(db.path), DATABASE)
    assert not same_stamp(before["ses_a"], after["ses_a"])
    assert same_stamp(before["ses_b"], after["ses_b"])
    assert after["ses_a"][3] > before["ses_a"][3]  # its newest update time, in ns
    # the listing and the one-member stamp agree; reading gives the same stamp with its size
    one = member_stamp(str(db.path), "ses_a", DATABASE)
    assert one is not None and same_stamp(one, after["ses_a"])
    assert same_stamp(read_member(str(db.path), "ses_a", DATABASE)[1], one)


def test_a_part_rewritten_in_place_moves_the_stamp(tmp_path: Path) -> None:
    db = _two(tmp_path)
    before = member_stamp(str(db.path), "ses_b", DATABASE)
    with db.connect() as conn:  # a streamed text part grows; OpenCode bumps time_updated
        conn.execute(
            "UPDATE part SET data = json_set(data, '$.text', 'hi there') "
            "WHERE session_id = 'ses_b' AND data LIKE '%\"text\"%'"
        )
    after = member_stamp(str(db.path), "ses_b", DATABASE)
    assert before is not None and after is not None and not same_stamp(before, after)


def test_reading_leaves_no_side_files_and_sees_a_live_writers_log(tmp_path: Path) -> None:
    db = _two(tmp_path)
    list_members(str(db.path), DATABASE)
    read_member(str(db.path), "ses_a", DATABASE)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["opencode.db"]
    writer = sqlite3.connect(db.path)  # a writer in WAL mode keeps its log open
    try:
        writer.execute("INSERT INTO session (id, project_id, slug, directory, title, version,"
                       " time_created, time_updated) VALUES ('ses_c', 'prj_1', 'c', '/w', 'c',"
                       " '1', 1, 1)")  # fmt: skip
        writer.commit()
        assert (tmp_path / "opencode.db-wal").exists()
        assert "ses_c" in list_members(str(db.path), DATABASE)  # committed, still in the log
    finally:
        writer.close()


def test_errors_are_clear(tmp_path: Path) -> None:
    db = _two(tmp_path)
    with pytest.raises(FileNotFoundError):
        read_member(str(db.path), "ses_gone", DATABASE)
    assert member_stamp(str(db.path), "ses_gone", DATABASE) is None
    with pytest.raises(MemberTooLarge):
        read_member(str(db.path), "ses_a", DATABASE, limit=100)
    with pytest.raises(FileNotFoundError):
        list_members(str(tmp_path / "absent.db"), DATABASE)
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not a database at all" * 100)
    with pytest.raises(DbUnreadable):
        list_members(str(junk), DATABASE)
    other = DbLayout("x.db", (DbTable("sessions", "id"),))
    with pytest.raises(DbUnreadable):  # a database without the layout's tables
        list_members(str(db.path), other)


def test_names() -> None:
    assert split_member(member_path("/a/opencode.db", "ses_1")) == ("/a/opencode.db", "ses_1")
    assert split_member("/a/b.jsonl") is None and split_member("/a/x.db#a/b") is None
    with pytest.raises(ValueError):
        DbTable("part; DROP TABLE part", "id")
    with pytest.raises(ValueError):
        DbLayout("a#b.db", (DbTable("s", "id"),))
    assert DATABASE.holds("opencode.db") and DATABASE.holds("opencode-beta.db")
    assert not DATABASE.holds("opencode.db-wal")


def test_discovery_lists_members_and_names_an_unreadable_database(tmp_path: Path) -> None:
    db = _two(tmp_path / "opencode")
    (tmp_path / "opencode" / "opencode-local.db").write_bytes(b"garbage" * 200)
    found, problems = discover({"opencode": tmp_path / "opencode"})
    assert sorted(c.path for c in found) == [f"{db.path}#ses_a", f"{db.path}#ses_b"]
    assert problems == [
        (str(tmp_path / "opencode" / "opencode-local.db"), "opencode", SOURCE_UNREADABLE)
    ]


def test_discovery_looks_for_databases_in_the_root_itself(tmp_path: Path) -> None:
    root = tmp_path / "opencode"
    _two(root)
    _two(root / "snapshot" / "deep")  # a database below the root: not the writer's store
    (root / "log").mkdir()
    (root / "log" / "2026.log").write_text("log")
    found, problems = discover({"opencode": root})
    assert {c.path.rsplit("#", 1)[0] for c in found} == {str(root / "opencode.db")}
    assert problems == []


@pytest.mark.parametrize("kind", ["directory", "symlink", "loop", "fifo"])
def test_a_database_name_that_is_no_regular_file_is_named_on_both_sides(
    tmp_path: Path, kind: str
) -> None:
    """A directory named ``opencode.db``, a symlink (links are never followed out of a root)
    or a link loop: every agent's sessions live in that one file, so skipping it in silence
    would hide them all. Discovery and the reader both name it unreadable; before, discovery
    skipped it without a word while the query side followed the link and called its sessions
    ``stale_session`` for ever."""
    root = tmp_path / "opencode"
    root.mkdir()
    db = root / "opencode.db"
    if kind == "directory":
        db.mkdir()
    elif kind == "symlink":
        real = _two(tmp_path / "elsewhere")
        db.symlink_to(real.path)
    elif kind == "loop":
        db.symlink_to(db.name)
    else:
        import os

        os.mkfifo(db)
    with pytest.raises(DbUnreadable):
        list_members(str(db), DATABASE)
    found, problems = discover({"opencode": root})
    assert found == []
    assert problems == [(str(db), "opencode", SOURCE_UNREADABLE)]


def test_a_session_row_rewritten_within_its_update_time_moves_the_stamp(tmp_path: Path) -> None:
    """Goose renames a session (and writes its token counts) with ``updated_at =
    datetime('now')``, whole seconds: two writes in one second left the stamp where it was,
    so the pipeline never read the second one and answered with the old row for ever (the
    database differential fuzz found it). The session's own row is in the signature now."""
    from stages.goose.adapter import DATABASE as GOOSE
    from tests.goose_db import GooseDb

    db = GooseDb(tmp_path / "sessions.db")
    db.session("s1", "first name")
    before = list_members(str(db.path), GOOSE)["s1"]
    with sqlite3.connect(db.path) as c:
        c.execute("UPDATE sessions SET name = 'other name', total_tokens = 7 WHERE id = 's1'")
    after = list_members(str(db.path), GOOSE)["s1"]
    assert not same_stamp(before, after)
    assert same_stamp(after, member_stamp(str(db.path), "s1", GOOSE) or before)
    assert same_stamp(after, read_member(str(db.path), "s1", GOOSE)[1])
