"""Folder listings are reused only while a folder is unchanged and settled."""

from __future__ import annotations

import os
from pathlib import Path

from query import scope
from store.sources import SessionFiles


def files(folder: Path) -> set[str]:
    names = SessionFiles(("*.jsonl",))
    return {Path(p).name for p in scope._session_files(str(folder), names, recursive=True)}


def test_a_new_file_is_seen_although_the_listing_was_cached(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.jsonl").write_text("{}\n")
    (tmp_path / "sub" / "skip.txt").write_text("")
    for d in (tmp_path, tmp_path / "sub"):
        os.utime(d, (1_000, 1_000))  # settled long ago: cacheable
    assert files(tmp_path) == {"a.jsonl"}
    assert str(tmp_path / "sub") in scope._LISTINGS
    # When a file appears, the folder's mtime moves and the listing is read again
    (tmp_path / "sub" / "b.jsonl").write_text("{}\n")
    assert files(tmp_path) == {"a.jsonl", "b.jsonl"}


def test_a_recently_changed_folder_is_never_cached(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_text("{}\n")
    scope._LISTINGS.pop(str(tmp_path), None)
    assert files(tmp_path) == {"a.jsonl"}
    assert str(tmp_path) not in scope._LISTINGS
    # so a second file written within the same clock tick cannot hide behind an equal mtime
    stat = tmp_path.stat()
    (tmp_path / "b.jsonl").write_text("{}\n")
    os.utime(tmp_path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert files(tmp_path) == {"a.jsonl", "b.jsonl"}
