"""A frozen index worker is found out in seconds, not after the 600 s progress deadline.

Before: a SIGSTOPped worker was killed only at ``stall_s`` (600 s): twelve appends waited
~610 s to become searchable while status said ``running``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from store import jsonio
from tests.doubles import LivePipeline, wait_for
from tests.helpers import PiRoot, header, jsonl, user

pytestmark = pytest.mark.integration

T0 = 1_700_000_000_000


def _recall(root: PiRoot, term: str) -> list[Any]:
    done = subprocess.run(
        [sys.executable, "-m", "query", "recall", term, "--scope", "global", "--json",
         "--config", str(root.config_path)],
        capture_output=True, timeout=120,
    )  # fmt: skip
    return jsonio.loads(done.stdout)["hits"] if done.returncode == 0 else []


def test_a_stopped_worker_is_replaced_and_appends_are_indexed(tmp_path: Path) -> None:
    root = PiRoot(tmp_path)
    root.write_config()
    paths = [
        root.session(f"s{n}", [header(f"s{n}", "/w"), user("u", None, f"first {n}", T0 + n)])
        for n in range(4)
    ]
    live = LivePipeline(root.config_path).start()
    stopped: list[int] = []
    try:
        state = live.wait_ready(root.index, timeout=60)
        wait_for(lambda: _recall(root, "first"), timeout=60, what="the first index")
        for child in state["children"]:
            if child["role"] == "index":
                os.kill(child["pid"], signal.SIGSTOP)
                stopped.append(child["pid"])
        for n, path in enumerate(paths):
            with path.open("ab") as f:
                f.write(jsonl([user("v", "u", f"quollterm{n} arrives", T0 + 10 + n)]))
        # Within the 20 s liveness deadline plus a restart, far below the old 600 s.
        for n in range(len(paths)):
            wait_for(lambda n=n: _recall(root, f"quollterm{n}"), timeout=150, what=f"append {n}")
        stalls = [e for e in live.events() if e.get("event") == "worker.stalled"]
        assert {e.get("cause") for e in stalls} == {"frozen"}, stalls
    finally:
        for pid in stopped:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
        assert live.stop() == 0
