"""What the attacks share: a tiny indexed Pi root."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import PiRoot, header, user

T0 = 1_700_000_000_000


def indexed_root(base: Path, text: str) -> PiRoot:
    """A Pi root of one session saying *text*, indexed by `pipeline run --once`."""
    root = PiRoot(base)
    root.write_config()
    root.session("s", [header("s1", "/w"), user("u1", None, text, T0)])
    done = subprocess.run(
        [sys.executable, "-m", "pipeline", "run", "--once", "--config", str(root.config_path)],
        capture_output=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return root


@pytest.fixture
def root(tmp_path: Path) -> PiRoot:
    """One indexed session saying "plain words numbatterm here"."""
    return indexed_root(tmp_path, "plain words numbatterm here")
