"""A full disk under the index: a clear message, a named state, nothing lost, and by itself
indexing resumes once there is room.

Before: a raw traceback and exit 1 (`run --once`), sessions counted as ``index_error``, and the
always-on workers crash-looping while status said ``stopped``. The index folder lives on a
small tmpfs made for the test (root only: skipped, with the reason, elsewhere).
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from store import jsonio
from tests.doubles import LivePipeline, wait_for
from tests.helpers import PiRoot, header, user

pytestmark = pytest.mark.integration

T0 = 1_700_000_000_000
SMALL, ROOMY = "192k", "64m"


def _mount(folder: Path, size: str, *, remount: bool = False) -> None:
    options = f"remount,size={size}" if remount else f"size={size},mode=0700"
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)], capture_output=True
    )
    if done.returncode != 0:
        if remount:
            raise AssertionError(done.stderr.decode())
        pytest.skip(f"cannot mount a small tmpfs here ({done.stderr.decode().strip()})")


@pytest.fixture
def root(tmp_path: Path) -> Iterator[PiRoot]:
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs for the index needs root")
    root = PiRoot(tmp_path)
    (tmp_path / "index").mkdir()
    _mount(tmp_path / "index", SMALL)
    try:
        root.write_config(hotSessions=200)
        for n in range(40):  # random words: the index cannot compress them below the tmpfs
            words = " ".join(secrets.token_hex(6) for _ in range(900))
            lines = [header(f"s{n}", "/w"), user("u", None, words, T0 + n)]
            if n == 39:
                lines.append(user("v", "u", "potoroo remembers", T0 + n + 1))
            root.session(f"s{n}", lines)
        yield root
    finally:
        subprocess.run(["umount", "-l", str(tmp_path / "index")], capture_output=True)


def _cli(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", *args], capture_output=True, timeout=300)


def _recall(root: PiRoot, term: str) -> dict[str, Any]:
    done = _cli("query", "recall", term, "--scope", "global", "--json",
                "--config", str(root.config_path))  # fmt: skip
    return jsonio.loads(done.stdout) if done.returncode == 0 else {"hits": []}


def test_once_says_where_and_how_much_room_then_resumes(root: PiRoot) -> None:
    done = _cli("pipeline", "run", "--once", "--config", str(root.config_path))
    err = done.stderr.decode()
    assert done.returncode == 1, err
    assert "no space left for the index in" in err and "bytes free" in err, err
    assert "Traceback" not in err, err
    status = jsonio.loads(_cli("pipeline", "status", "--json", "--config",
                               str(root.config_path)).stdout)  # fmt: skip
    assert status["pipeline"]["disk"]["full"] is True
    assert not [s for s in status.get("skippedSessions", []) if s["reason"] == "index_error"]

    _mount(root.index, ROOMY, remount=True)
    again = _cli("pipeline", "run", "--once", "--config", str(root.config_path))
    assert again.returncode == 0, again.stderr.decode()[-2000:]
    assert _recall(root, "potoroo")["hits"]


def test_always_on_pauses_names_the_state_and_resumes_by_itself(root: PiRoot) -> None:
    live = LivePipeline(root.config_path).start()
    try:

        def said_full() -> bool:
            return any(e.get("event") == "disk.full" for e in live.events())

        wait_for(said_full, timeout=120, what="the disk.full event")
        status = jsonio.loads(_cli("pipeline", "status", "--json", "--config",
                                   str(root.config_path)).stdout)  # fmt: skip
        assert status["pipeline"]["disk"]["full"] is True
        assert live.process is not None and live.process.poll() is None
        _mount(root.index, ROOMY, remount=True)
        wait_for(lambda: _recall(root, "potoroo")["hits"], timeout=180, what="indexing resumed")
        failed = [e for e in live.events() if e.get("event") == "session.failed"]
        assert failed == [], failed[:2]
    finally:
        assert live.stop() == 0
