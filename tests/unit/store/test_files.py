"""Reading index and session files leaves their access time alone."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pytest

import store.files
from store.files import names_quietly, open_quietly, read_quietly


@pytest.mark.skipif(not hasattr(os, "O_NOATIME"), reason="O_NOATIME is Linux-only")
def test_a_quiet_read_does_not_move_the_access_time(tmp_path: Path) -> None:
    path = tmp_path / "record"
    path.write_bytes(b"x" * 70_000)
    st = path.stat()
    # an access time before the modification time: relatime would move it on any read
    os.utime(path, ns=(st.st_mtime_ns - 10**12, st.st_mtime_ns))
    before = path.stat().st_atime_ns
    assert read_quietly(path) == b"x" * 70_000
    assert path.stat().st_atime_ns == before
    path.read_bytes()  # the control: a plain read does move it here
    assert path.stat().st_atime_ns != before


@pytest.mark.skipif(not hasattr(os, "O_NOATIME"), reason="O_NOATIME is Linux-only")
def test_a_quiet_listing_does_not_move_the_folders_access_time(tmp_path: Path) -> None:
    """The first no-op rerun after a build listed the checkpoints and archive chain folders
    plainly, and the kernel billed their access-time updates as 4-8 KB written."""
    folder = tmp_path / "chains"
    folder.mkdir()
    (folder / "a").write_bytes(b"")
    (folder / "b").write_bytes(b"")
    st = folder.stat()
    os.utime(folder, ns=(st.st_mtime_ns - 10**12, st.st_mtime_ns))
    before = folder.stat().st_atime_ns
    assert sorted(names_quietly(folder)) == ["a", "b"]
    assert folder.stat().st_atime_ns == before
    os.listdir(folder)  # the control: a plain listing does move it here
    assert folder.stat().st_atime_ns != before
    with pytest.raises(NotADirectoryError):
        names_quietly(folder / "a")
    os.symlink(folder, tmp_path / "link")
    with pytest.raises(OSError) as refused:  # Linux: ENOTDIR, elsewhere ELOOP
        names_quietly(tmp_path / "link", os.O_NOFOLLOW)
    assert refused.value.errno in (errno.ENOTDIR, errno.ELOOP)


def test_a_file_we_do_not_own_is_opened_plainly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "theirs"
    path.write_bytes(b"data")
    real = os.open
    asked: list[int] = []

    def refusing(p: Any, flags: int, *args: Any) -> int:
        asked.append(flags)
        if flags & getattr(os, "O_NOATIME", 0):
            raise PermissionError(1, "Operation not permitted")
        return real(p, flags, *args)

    monkeypatch.setattr(store.files.os, "open", refusing)
    assert read_quietly(path) == b"data"
    fd = open_quietly(path, getattr(os, "O_NOFOLLOW", 0))
    os.close(fd)
    assert asked[-1] & getattr(os, "O_NOFOLLOW", 0)
    with pytest.raises(FileNotFoundError):
        read_quietly(tmp_path / "missing")
