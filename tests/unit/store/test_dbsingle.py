"""A file holding one session of an older version of a database writer (``store.dbsingle``,
Goose's ``sessions/<id>.jsonl``): its id from the name, its bytes as they are, its stamp from
the file, the size limit, and the database beside it taking the sessions it holds."""

from __future__ import annotations

from pathlib import Path

import pytest

from stages.goose.adapter import DATABASE
from store.dberrors import MemberTooLarge
from store.dblayout import same_stamp
from store.dbsource import is_superseded, list_members, member_stamp, read_member
from tests.goose_db import GooseDb


def test_one_file_one_session_its_bytes_as_they_are(tmp_path: Path) -> None:
    path = tmp_path / "20240101_1.jsonl"
    path.write_bytes(b'{"description": "d"}\n{"role": "user"}\n')
    listed = list_members(str(path), DATABASE)
    assert list(listed) == ["20240101_1"]
    data, stamp = read_member(str(path), "20240101_1", DATABASE)
    assert data == path.read_bytes() and stamp[2] == len(data)
    assert same_stamp(listed["20240101_1"], stamp)
    with path.open("ab") as f:
        f.write(b'{"role": "assistant"}\n')
    moved = member_stamp(str(path), "20240101_1", DATABASE)
    assert moved is not None and not same_stamp(moved, stamp)
    assert member_stamp(str(path), "other", DATABASE) is None  # the file names its session
    with pytest.raises(FileNotFoundError):
        read_member(str(path), "other", DATABASE)
    with pytest.raises(MemberTooLarge):
        read_member(str(path), "20240101_1", DATABASE, limit=10)
    path.unlink()
    assert member_stamp(str(path), "20240101_1", DATABASE) is None


def test_a_session_the_database_holds_is_left_to_it(tmp_path: Path) -> None:
    path = tmp_path / "20240101_1.jsonl"
    path.write_bytes(b'{"description": "d"}\n')
    db = GooseDb(tmp_path / "sessions.db")
    db.session("20240101_1", "imported")
    assert list_members(str(path), DATABASE) == {}
    assert member_stamp(str(path), "20240101_1", DATABASE) is None
    assert is_superseded(f"{path}#20240101_1", DATABASE)
    with pytest.raises(FileNotFoundError):
        read_member(str(path), "20240101_1", DATABASE)
    assert DATABASE.legacy(str(tmp_path), "20240101_1") == (f"{path}#20240101_1",)
