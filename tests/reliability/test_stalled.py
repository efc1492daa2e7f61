"""A stopped `query serve` or a crowd of stalled clients never stalls a query.

Before: a frozen server (SIGSTOP) made every `query` call wait 120 s and exit 1, and 64
connections that sent nothing pushed every new client in-process for the 300 s idle timeout.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
from typing import Any

import pytest

import query.server as server_module
from query.server import QueryServer
from query.transport import Backend, socket_address, socket_path
from store.config import load_config
from tests.helpers import PiRoot
from tests.integration.test_serve import Served, ping, wait_for

pytestmark = pytest.mark.integration

T0 = 1_700_000_000_000


def test_a_frozen_server_is_bypassed_in_seconds(root: PiRoot) -> None:
    config = load_config(root.config_path)
    served = Served(root.config_path)
    try:
        wait_for(lambda: ping(config) is not None or served.proc.poll() is not None)
        os.kill(served.proc.pid, signal.SIGSTOP)
        try:
            # Far below the old 120 s wait; the liveness window is 3 s.
            done = subprocess.run(
                [sys.executable, "-m", "query", "recall", "numbatterm", "--scope", "global",
                 "--json", "--config", str(root.config_path)],
                capture_output=True, timeout=60,
            )  # fmt: skip
        finally:
            os.kill(served.proc.pid, signal.SIGCONT)
        assert done.returncode == 0, done.stderr
        assert b"numbatterm" in done.stdout
    finally:
        assert served.stop() == 0


def test_stalled_connections_do_not_keep_a_new_client_out(root: PiRoot) -> None:
    config = load_config(root.config_path)
    served = Served(root.config_path, "--max-connections", "8")
    stalled: list[socket.socket] = []
    try:
        wait_for(lambda: ping(config) is not None or served.proc.poll() is not None)
        for n in range(12):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            with socket_address(socket_path(config.index_dir)) as address:
                s.connect(address)
            if n % 2:
                s.sendall(b"\x00\x00")  # half a frame header, then nothing
            stalled.append(s)
        with Backend(config, server="require") as client:
            result = client.recall({"query": "numbatterm", "scope": "global"}, cwd="/w")
            assert result["total"] == 1 and client.served_by == "server"
    finally:
        for s in stalled:
            s.close()
        assert served.stop() == 0


def test_a_long_request_beats_while_it_runs(root: PiRoot, monkeypatch: pytest.MonkeyPatch) -> None:
    release = threading.Event()

    def slow(engine: Any, op: str, args: Any, cwd: str) -> dict[str, Any]:
        assert release.wait(60), "the beats never came"
        return {"done": True}

    monkeypatch.setattr(server_module, "run_local", slow)
    beats: list[int] = []

    def beat() -> None:
        beats.append(1)
        if len(beats) == 3:
            release.set()

    server = QueryServer(load_config(root.config_path))
    try:
        frame = {"op": "recall", "args": {}, "cwd": "/w", "beat": 0.05}
        assert server.answer(frame, beat) == {"ok": True, "result": {"done": True}}
        assert len(beats) >= 3
        release.clear()
        beats.clear()
        # A client that did not ask for beats gets none (older clients read frames 1:1).
        release.set()
        assert server.answer({"op": "recall", "args": {}, "cwd": "/w"}, beat)["ok"]
        assert beats == []
    finally:
        server.engine.close()
