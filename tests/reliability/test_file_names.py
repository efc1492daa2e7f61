"""File names are bytes: a name that is not UTF-8 is indexed, reported and followed losslessly.

A Latin-1 ``café.jsonl`` under a root used to stop everything (``run --once`` exited 1 while
publishing, always-on crash-looped its watcher, ``status --json`` raised).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from store import jsonio
from tests.doubles import LivePipeline, wait_for
from tests.helpers import PiRoot, header, jsonl, user

pytestmark = pytest.mark.integration

T0 = 1_700_000_000_000
LATIN1 = b"caf\xe9.jsonl"


def _run(*args: str, check: bool = True) -> subprocess.CompletedProcess[bytes]:
    # A strict UTF-8 locale (en_US.UTF-8 on most desktops) is where printing such a name fails.
    env = {**os.environ, "PYTHONIOENCODING": "utf-8:strict"}
    done = subprocess.run(
        [sys.executable, "-m", args[0], *args[1:]], capture_output=True, timeout=120, env=env
    )
    if check:
        assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    return done


def _corpus(tmp_path: Path) -> tuple[PiRoot, bytes]:
    root = PiRoot(tmp_path)
    root.write_config()
    plain = root.session("plain", [header("s1", "/w"), user("u1", None, "ordinary words", T0)])
    latin = os.fsencode(plain.parent) + b"/" + LATIN1
    with open(latin, "wb") as f:
        f.write(jsonl([header("s2", "/w"), user("u1", None, "quokkaterm lives here", T0 + 1)]))
    return root, latin


def _recall(root: PiRoot, term: str) -> dict[str, Any]:
    out = _run("query", "recall", term, "--scope", "global", "--json",
               "--config", str(root.config_path))  # fmt: skip
    result: dict[str, Any] = jsonio.loads(out.stdout)
    return result


def test_once_status_recall_and_follow_keep_the_name(tmp_path: Path) -> None:
    root, latin = _corpus(tmp_path)
    _run("pipeline", "run", "--once", "--config", str(root.config_path))

    status = jsonio.loads(
        _run("pipeline", "status", "--json", "--config", str(root.config_path)).stdout
    )
    assert (status["indexed"], status["eligible"]) == (2, 2), status
    text = _run("pipeline", "status", "--config", str(root.config_path)).stdout
    assert b"2 indexed of 2 eligible" in text
    human = _run("query", "recall", "quokkaterm", "--scope", "global", "--text",
                 "--config", str(root.config_path)).stdout  # fmt: skip
    assert LATIN1 in human  # the name's own bytes, as ls prints them into a pipe

    hits = _recall(root, "quokkaterm")["hits"]
    assert [os.fsencode(h["follow"]["args"]["session"]) for h in hits] == [latin]
    follow = jsonio.dumps(hits[0]["follow"]).decode("ascii")
    expanded = jsonio.loads(_run("query", "call", follow, "--config", str(root.config_path)).stdout)
    assert expanded["entries"][0]["text"] == "quokkaterm lives here"
    assert os.fsencode(expanded["session"]) == latin


def test_a_malformed_latin1_session_is_named_in_status(tmp_path: Path) -> None:
    root, latin = _corpus(tmp_path)
    with open(latin, "ab") as f:
        f.write(b"{not json\n")
    _run("pipeline", "run", "--once", "--config", str(root.config_path))
    status = jsonio.loads(
        _run("pipeline", "status", "--json", "--config", str(root.config_path)).stdout
    )
    named = [os.fsencode(s["path"]) for s in status["incompleteSessions"]]
    assert named == [latin], status["incompleteSessions"]


def test_always_on_indexes_and_follows_appends_to_a_latin1_name(tmp_path: Path) -> None:
    root, latin = _corpus(tmp_path)
    live = LivePipeline(root.config_path).start()
    try:
        live.wait_ready(root.index, timeout=60)
        # running is not published: on a loaded machine the first generation comes later
        wait_for((root.index / "CURRENT").exists, timeout=60, what="the first generation")
        wait_for(lambda: _recall(root, "quokkaterm")["hits"], timeout=60, what="first index")
        with open(latin, "ab") as f:
            f.write(jsonl([user("u2", "u1", "wallabyterm arrives later", T0 + 2)]))
        hits = wait_for(lambda: _recall(root, "wallabyterm")["hits"], timeout=60, what="the append")
        assert os.fsencode(hits[0]["follow"]["args"]["session"]) == latin
        assert live.process is not None and live.process.poll() is None
        crashes = [e for e in live.events() if e.get("level") in ("error", "critical")]
        assert not crashes, crashes
    finally:
        assert live.stop() == 0


def test_json_round_trip_of_a_surrogate_escaped_name() -> None:
    name = os.fsdecode(b"/r/" + LATIN1)
    data = jsonio.dumps({"path": name})
    assert jsonio.loads(data) == {"path": name}
    with pytest.raises(orjson.JSONEncodeError):
        orjson.dumps({"path": name})
    assert jsonio.dumps({"a": "b"}, indent=True) == orjson.dumps(
        {"a": "b"}, option=orjson.OPT_INDENT_2
    )


def test_mcp_answers_with_and_follows_a_latin1_name(tmp_path: Path) -> None:
    from tests.integration.test_mcp import run_client

    root, latin = _corpus(tmp_path)
    _run("pipeline", "run", "--once", "--config", str(root.config_path))

    async def body(session: Any) -> tuple[Any, Any]:
        found = await session.call_tool("memory_recall", {"query": "quokkaterm", "scope": "global"})
        follow = found.structured_content["hits"][0]["follow"]
        return found, await session.call_tool("memory_expand", follow["args"])

    found, expanded = run_client(root.config_path, body)
    assert not found.is_error and not expanded.is_error, (found, expanded)
    hit = found.structured_content["hits"][0]
    # JSON-RPC carries UTF-8 only: the name's stray byte is spelled \xNN, and taken back.
    assert hit["follow"]["args"]["session"].encode() == latin.replace(b"\xe9", b"\\xe9")
    assert expanded.structured_content["entries"][0]["text"] == "quokkaterm lives here"
