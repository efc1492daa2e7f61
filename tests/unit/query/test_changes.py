"""The inotify change feed: every change to a watched path is in the next drain, none is lost.

These run against the real kernel (they skip where inotify cannot be had); each asserts the
batch a drain returns after one filesystem operation made in this thread — the kernel queues
an event before the syscall returns, so no waiting is involved.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from query.changes import IN_MODIFY, IN_Q_OVERFLOW, Batch, Changes, encode_event


@pytest.fixture
def feed() -> Iterator[Changes]:
    changes = Changes.open()
    if changes is None:
        pytest.skip("inotify is not available on this platform")
    yield changes
    changes.close()


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    d = tmp_path / "root" / "proj"
    d.mkdir(parents=True)
    (d / "a.jsonl").write_text("{}\n")
    return d


def drained(feed: Changes) -> Batch:
    return feed.drain()


def quiet(batch: Batch, under: Path) -> bool:
    """Nothing under *under* in *batch*: the ancestors up to / are watched too, and other
    processes may well be creating files in /tmp meanwhile."""
    if batch.overflow:
        return False
    prefix = str(under.parent)
    named = batch.paths | batch.folders | batch.listings
    return not any(p == prefix or p.startswith(prefix + "/") for p in named)


def test_nothing_happened_is_an_empty_batch(feed: Changes, folder: Path) -> None:
    assert feed.watch(str(folder))
    assert quiet(drained(feed), folder)


@pytest.mark.parametrize(
    "op",
    ["append", "touch", "chmod", "truncate", "delete", "replace", "rename_away", "create"],
)
def test_each_file_operation_names_the_file(feed: Changes, folder: Path, op: str) -> None:
    a = folder / "a.jsonl"
    assert feed.watch(str(folder))
    assert quiet(drained(feed), folder)
    if op == "append":
        with a.open("a") as f:
            f.write("{}\n")
    elif op == "touch":
        os.utime(a, ns=(1, 1))
    elif op == "chmod":
        a.chmod(0o600)
    elif op == "truncate":
        os.truncate(a, 0)
    elif op == "delete":
        a.unlink()
    elif op == "replace":
        (folder / ".tmp").write_text("{}\n")
        os.replace(folder / ".tmp", a)
    elif op == "rename_away":
        a.rename(folder / "b.jsonl")
    else:
        a = folder / "new.jsonl"
        a.write_text("{}\n")
    batch = drained(feed)
    assert str(a) in batch.paths
    assert not batch.overflow
    assert quiet(drained(feed), folder)
    if op in ("delete", "replace", "rename_away", "create"):
        assert str(folder) in batch.listings


def test_a_renamed_folder_and_everything_under_it_is_forgotten(feed: Changes, folder: Path) -> None:
    sub = folder / "sub"
    sub.mkdir()
    assert feed.watch(str(sub))
    assert quiet(drained(feed), folder)
    folder.rename(folder.parent / "moved")
    batch = drained(feed)
    assert {str(folder), str(sub)} <= batch.folders
    # the watches followed the old inodes, so they are gone and made again on demand
    folder.mkdir()
    (folder / "a.jsonl").write_text("{}\n")
    assert feed.watch(str(folder))
    drained(feed)
    (folder / "a.jsonl").write_text("x\n")
    assert str(folder / "a.jsonl") in drained(feed).paths


def test_an_ancestor_rename_voids_the_folders_below_it(feed: Changes, folder: Path) -> None:
    assert feed.watch(str(folder))
    root = folder.parent
    root.rename(root.parent / "old-root")
    root.mkdir()
    batch = drained(feed)
    assert str(folder) in batch.folders
    assert str(root) in batch.folders


def test_a_chmod_of_the_folder_itself_voids_it(feed: Changes, folder: Path) -> None:
    assert feed.watch(str(folder))
    folder.chmod(0o700)
    assert str(folder) in drained(feed).folders


def test_a_missing_folder_cannot_be_watched(feed: Changes, tmp_path: Path) -> None:
    assert not feed.watch(str(tmp_path / "nope"))


def test_overflow_drops_every_watch_and_later_changes_still_arrive(
    feed: Changes, folder: Path
) -> None:
    assert feed.watch(str(folder))
    feed.inject(encode_event(-1, IN_Q_OVERFLOW))
    assert drained(feed).overflow
    # the old watch is gone: without a new one nothing is reported
    (folder / "a.jsonl").write_text("changed\n")
    assert quiet(drained(feed), folder)
    assert feed.watch(str(folder))
    (folder / "a.jsonl").write_text("again\n")
    assert str(folder / "a.jsonl") in drained(feed).paths


def test_injected_events_are_parsed_as_the_kernel_lays_them_out(
    feed: Changes, folder: Path
) -> None:
    assert feed.watch(str(folder))
    wd = feed._wd[str(folder)]
    feed.inject(encode_event(wd, IN_MODIFY, "a.jsonl") + encode_event(wd, IN_MODIFY, "bb.jsonl"))
    mine = {p for p in drained(feed).paths if p.startswith(str(folder))}
    assert mine == {str(folder / "a.jsonl"), str(folder / "bb.jsonl")}


def test_a_closed_feed_vouches_for_nothing(feed: Changes, folder: Path) -> None:
    feed.close()
    assert not feed.alive
    assert not feed.watch(str(folder))
    assert quiet(drained(feed), folder)


def test_a_symlink_on_the_path_pointed_elsewhere_voids_the_folder(
    feed: Changes, tmp_path: Path
) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    link = tmp_path / "root"
    link.symlink_to(tmp_path / "a")
    assert feed.watch(str(link))
    # the watch is on a's inode, which nothing happens to: only the parent's IN_MOVED_TO
    # says the path names another folder now
    (tmp_path / "next").symlink_to(tmp_path / "b")
    os.replace(tmp_path / "next", link)
    assert str(link) in drained(feed).folders
