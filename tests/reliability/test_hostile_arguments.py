"""Hostile query arguments get ``invalid_argument`` on every path: CLI, `query serve`, MCP.

A NUL byte in a ``session``, ``scope`` or ``cwd`` used to surface as a traceback (CLI), an
internal error (server) or MCP error code 0: the OS refuses such a path deep inside resolution.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from query.errors import InvalidArgument
from query.transport import Backend
from store import jsonio
from store.agents import agent_names
from tests.helpers import PiRoot
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


def _raw_mcp(root: PiRoot, lines: list[bytes]) -> list[dict[str, Any]]:
    """Send *lines* to `query mcp` as a client would (after initialize) and read every reply."""
    import orjson

    hello = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]  # fmt: skip
    wire = b"".join(orjson.dumps(m) + b"\n" for m in hello) + b"".join(lines)
    proc = subprocess.Popen(
        [sys.executable, "-m", "query", "mcp", "--config", str(root.config_path)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    replies: list[dict[str, Any]] = []
    try:
        proc.stdin.write(wire)
        proc.stdin.flush()
        # stdin stays open until every request is answered: EOF would end the server first.
        while len(replies) < len(lines) + 1:  # initialize's reply, then one per line
            line = proc.stdout.readline()
            assert line, "the server ended before answering every request"
            replies.append(orjson.loads(line))
    finally:
        proc.stdin.close()
        proc.wait(60)
        proc.stdout.close()
    return replies


@pytest.mark.parametrize("depth", [250, 1000])
def test_mcp_answers_arguments_nested_too_deeply(root: PiRoot, depth: int) -> None:
    deep = b"[" * depth + b"]" * depth
    call = (
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"memory_recall",'
        b'"arguments":{"query":' + deep + b"}}}\n"
    )
    other = b'{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"x":' + deep + b"}}\n"
    fine = (
        b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"memory_recall",'
        b'"arguments":{"query":"plain","scope":"global"}}}\n'
    )
    replies = {r.get("id"): r for r in _raw_mcp(root, [call, other, fine])}
    refused = replies[1]["result"]
    assert refused["isError"] is True
    assert refused["structuredContent"]["error"]["code"] == "invalid_argument"
    assert "nested too deeply" in refused["structuredContent"]["error"]["message"]
    assert replies[2]["result"]["isError"] is True  # answered, not dropped
    assert replies[3]["result"]["structuredContent"]["total"] == 1  # still serving


def test_a_frame_nested_100k_deep_gets_bad_request_and_the_server_lives(root: PiRoot) -> None:
    import socket

    from query.transport import read_frame, socket_address, socket_path

    config = load_config_of(root)
    server = Served(root.config_path)
    try:
        wait_for(lambda: ping(config) is not None or server.proc.poll() is not None)
        body = b'{"op":"recall","cwd":"/w","args":{"query":' + b"[" * 100_000 + b"]" * 100_000
        body += b"}}"
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            with socket_address(socket_path(config.index_dir)) as address:
                s.connect(address)
            s.settimeout(60)
            s.sendall(len(body).to_bytes(4, "big") + body)
            answer = read_frame(s, 1 << 20)
        assert answer["ok"] is False and answer["error"]["code"] == "bad_request", answer
        assert ping(config) is not None
    finally:
        assert server.stop() == 0


def load_config_of(root: PiRoot) -> Any:
    from store.config import load_config

    return load_config(root.config_path)


# ``agent`` values an attacker (or a confused client) may send: look-alikes of every
# registered name (a database file, a member, a path, case, spacing, a NUL byte), wrong types
HOSTILE_AGENTS: list[Any] = [
    *(
        v
        for name in agent_names()
        for v in (name.upper(), f"{name}\x00", f" {name}", f"{name}/../pi", f"{name}#s1")
    ),
    "opencode.db", "sessions.db#s1", "", "\udcff", "x" * 100_000, ["pi"], {"agent": "pi"}, 7, True,
]  # fmt: skip


def test_hostile_agent_values_are_refused_and_every_registered_agent_answers(
    root: PiRoot,
) -> None:
    """Every registered agent (``store.agents.agent_names()``: the next one too) is accepted
    by recall and sessions and gives a complete answer over a root that holds none of its
    sessions; anything else is ``invalid_argument``, in process and through `query serve`."""
    config = load_config_of(root)
    refs = ("memory.recall", "memory.sessions")

    def args(ref: str, agent: Any) -> dict[str, Any]:
        out = {"scope": "global", "agent": agent}
        return {**out, "query": "numbatterm"} if ref == "memory.recall" else out

    server = Served(root.config_path)
    tried = 0
    try:
        wait_for(lambda: ping(config) is not None or server.proc.poll() is not None)
        with Backend(config, server="off") as local, Backend(config, server="require") as remote:
            for backend in (local, remote):
                for ref in refs:
                    for name in agent_names():
                        page = backend.call({"ref": ref, "args": args(ref, name)})
                        if ref == "memory.recall":
                            assert page["coverage"]["complete"], (name, page["coverage"])
                            assert page["total"] == (1 if name == "pi" else 0), name
                    for value in HOSTILE_AGENTS:
                        with pytest.raises(InvalidArgument, match="agent"):
                            backend.call({"ref": ref, "args": args(ref, value)})
                        tried += 1
            assert remote.ping() is not None
    finally:
        assert server.stop() == 0
    for value in ("opencode.db", "GOOSE", "cursor\x01"):
        done = subprocess.run(
            [sys.executable, "-m", "query", "recall", "numbatterm", "--agent", value,
             "--config", str(root.config_path)],
            capture_output=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 2 and b"Traceback" not in done.stderr, done.stderr
        tried += 1
    print(f"\nhostile agent values: {tried} refused, {len(agent_names())} agents answered")
