"""Hostile query arguments get ``invalid_argument`` on every path: CLI, `query serve`, MCP.

A NUL byte in a ``session``, ``scope`` or ``cwd`` used to surface as a traceback (CLI), an
internal error (server) or MCP error code 0: the OS refuses such a path deep inside resolution.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from query.errors import InvalidArgument
from query.transport import Backend
from store import jsonio
from tests.helpers import PiRoot, header, user
from tests.integration.test_mcp import run_client
from tests.integration.test_serve import Served, ping, wait_for

pytestmark = pytest.mark.integration

T0 = 1_700_000_000_000
NUL_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("memory.expand", {"session": "/tmp/a\x00b.jsonl"}),
    ("memory.expand", {"session": "pi:\x00"}),
    ("memory.recall", {"query": "x", "scope": "session:/tmp/a\x00b"}),
    ("memory.recall", {"query": "x", "scope": "project", "cwd": "/a\x00b"}),
    ("memory.sessions", {"scope": "project", "cwd": "/a\x00b"}),
]


@pytest.fixture
def root(tmp_path: Path) -> PiRoot:
    root = PiRoot(tmp_path)
    root.write_config()
    root.session("s", [header("s1", "/w"), user("u1", None, "plain words", T0)])
    done = subprocess.run(
        [sys.executable, "-m", "pipeline", "run", "--once", "--config", str(root.config_path)],
        capture_output=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return root


@pytest.mark.parametrize(("ref", "args"), NUL_CALLS)
def test_cli_says_invalid_argument(root: PiRoot, ref: str, args: dict[str, Any]) -> None:
    token = jsonio.dumps({"ref": ref, "args": args}).decode()
    done = subprocess.run(
        [sys.executable, "-m", "query", "call", token, "--config", str(root.config_path)],
        capture_output=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2, done
    assert b"NUL byte" in done.stderr and b"Traceback" not in done.stderr, done.stderr


def test_server_and_in_process_say_invalid_argument(root: PiRoot) -> None:
    from store.config import load_config

    config = load_config(root.config_path)
    with Backend(config, server="off") as local:
        for ref, args in NUL_CALLS:
            with pytest.raises(InvalidArgument, match="NUL byte"):
                local.call({"ref": ref, "args": args})
    server = Served(root.config_path)
    try:
        wait_for(lambda: ping(config) is not None or server.proc.poll() is not None)
        with Backend(config, server="require") as remote:
            for ref, args in NUL_CALLS:
                with pytest.raises(InvalidArgument, match="NUL byte"):
                    remote.call({"ref": ref, "args": args})
            assert remote.ping() is not None  # the connection survived every refusal
    finally:
        assert server.stop() == 0


def test_mcp_says_invalid_argument(root: PiRoot) -> None:
    async def body(session: Any) -> list[Any]:
        return [await session.call_tool(ref.replace(".", "_"), args) for ref, args in NUL_CALLS]

    for result in run_client(root.config_path, body):
        assert result.is_error
        assert result.structured_content["error"]["code"] == "invalid_argument", result
