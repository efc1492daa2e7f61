"""Issue 18 acceptance: planted credentials never leave through the index, are audited, and
are revealed by the local CLI only."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout, suppress
from pathlib import Path
from typing import Any

import msgpack
import orjson
import pytest
import zstandard

from query import cli
from query.mcp import build_server  # noqa: F401  (the MCP server must import cleanly)
from tests.helpers import (
    assistant,
    claude_line,
    codex_object_rollout,
    codex_said,
    jsonl,
    tool_result,
    user,
)
from tests.secret_samples import PLANTED
from tests.unit.query.kit import CWD, T0, Kit

KINDS = sorted(PLANTED)


def _pi_records(kind: str, text: str) -> list[dict[str, Any]]:
    call = {"id": "c1", "name": "bash", "arguments": {"command": f"echo '{text}'"}}
    return [
        {"type": "session", "version": 3, "id": f"pi-{kind}", "timestamp": "2025-01-01T00:00:00Z",
         "cwd": CWD},
        user("u1", None, f"user says {text}", T0),
        assistant("a1", "u1", "running it", T0 + 1, call),
        tool_result("r1", "a1", "bash", f"output:\n{text}\n", T0 + 2),
    ]  # fmt: skip


def _claude_lines(kind: str, text: str) -> list[dict[str, Any]]:
    sid = f"c0ffee00-0000-4000-8000-{abs(hash(kind)) % 10**12:012d}"
    use = {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": f"cat {text}"}}
    result = {"type": "tool_result", "tool_use_id": "t1", "content": f"out {text}"}
    return [
        claude_line("user", "u1", None, T0, f"user says {text}", session=sid),
        claude_line("assistant", "a1", "u1", T0 + 1, [use], message_id="m1", session=sid),
        claude_line("user", "u2", "a1", T0 + 2, [result], session=sid),
    ]


def _codex(kind: str, text: str) -> bytes:
    args = json.dumps({"command": ["bash", "-lc", f"echo {text}"]})
    return codex_object_rollout(
        f"codex-{kind}",
        [
            codex_said("user", f"user says {text}"),
            {"type": "function_call", "name": "shell", "arguments": args, "call_id": "k1"},
            {"type": "function_call_output", "call_id": "k1", "output": f"out {text}"},
        ],
    )


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> Kit:
    kit = Kit(tmp_path_factory.mktemp("secrets"))
    claude = kit.pi.base / "claude" / "-work-proj"
    claude.mkdir(parents=True)
    codex = kit.pi.base / "codex"
    codex.mkdir()
    for kind, (text, _) in PLANTED.items():
        kit.session(f"s-{kind}", _pi_records(kind, text))
        lines = _claude_lines(kind, text)
        (claude / f"{lines[0]['sessionId']}.jsonl").write_bytes(jsonl(lines))
        (codex / f"rollout-2025-05-01-{kind}.json").write_bytes(_codex(kind, text))
    kit.build()
    return kit


def _index_bytes(index: Path) -> list[bytes]:
    """Every file of the index, and every zstd frame inside one decompressed."""
    out: list[bytes] = []
    for path in index.rglob("*"):
        if not path.is_file():
            continue
        raw = path.read_bytes()
        out.append(raw)
        at = raw.find(b"\x28\xb5\x2f\xfd")
        while at >= 0:
            with suppress(zstandard.ZstdError):
                out.append(zstandard.ZstdDecompressor().decompressobj().decompress(raw[at:]))
            at = raw.find(b"\x28\xb5\x2f\xfd", at + 1)
        try:
            env = msgpack.unpackb(raw, raw=False, strict_map_key=False)
        except Exception:
            continue
        if isinstance(env, list) and len(env) == 5 and env[4] == "zstd":
            out.append(zstandard.ZstdDecompressor().decompress(env[3], max_output_size=1 << 28))
    return out


def _run(kit: Kit, *argv: str) -> tuple[int, str]:
    buf = io.StringIO()
    with redirect_stdout(buf):
        code = cli.main([*argv, "--json", "--no-server", "--cwd", CWD, "--config",
                         str(kit.pi.config_path)])  # fmt: skip
    return code, buf.getvalue()


@pytest.mark.parametrize("kind", KINDS)
def test_no_planted_secret_is_in_the_index_folder(planted: Kit, kind: str) -> None:
    value = PLANTED[kind][1].encode()
    probe = value[: min(len(value), 24)] if kind != "private_key" else value[40:80]
    assert not any(probe in blob for blob in _index_bytes(planted.pi.index)), kind


@pytest.mark.parametrize("kind", KINDS)
def test_recall_and_expand_show_the_placeholder_not_the_secret(planted: Kit, kind: str) -> None:
    value = PLANTED[kind][1]
    page = planted.recall(query="user says", scope="global", pageSize=50)
    blob = orjson.dumps(page).decode()
    assert value not in blob and value[:24] not in blob
    assert "[REDACTED:" in blob
    for row in planted.sessions(scope="global", limit=500)["sessions"]:
        if kind not in row["file"] and kind not in row["id"]:
            continue
        last = row["entryCount"] - 1
        got = planted.expand(session=row["file"], entryRange={"first": 0, "last": last})
        text = orjson.dumps(got).decode()
        assert "error" not in got and value[:24] not in text and "REDACTED" in text


def test_the_placeholder_is_searchable_and_the_secret_is_not(planted: Kit) -> None:
    page = planted.recall(query="redacted aws_access_token", scope="global", queryMatch="all")
    assert page["total"] >= 3
    for kind in ("aws_access_token", "github_pat", "stripe_access_token"):
        secret = PLANTED[kind][1]
        assert planted.recall(query=secret, scope="global")["total"] == 0


def test_query_secrets_lists_every_planted_kind_per_agent(planted: Kit) -> None:
    code, out = _run(planted, "secrets", "--scope", "global")
    assert code == 0
    found = json.loads(out)
    seen = {(r["session"].split(":")[0], r["kind"]) for r in found["findings"]}
    for kind in KINDS:
        for agent in ("pi", "claude", "codex"):
            assert (agent, kind) in seen, (agent, kind)
    for row in found["findings"]:
        value = PLANTED.get(row["kind"], ("", "\0" * 30))[1]
        assert value not in out
        assert row["fingerprint"].startswith(value[:4]) and row["entries"]
        if not row["session"].startswith("codex:"):  # era-A rollout items carry no time
            assert row["firstSeen"] is not None and row["lastSeen"] >= row["firstSeen"]


@pytest.mark.parametrize("kind", ["aws_access_token", "private_key", "url_password"])
def test_expand_reveal_shows_the_original_locally(planted: Kit, kind: str) -> None:
    text, value = PLANTED[kind]
    session = next(p for p in planted.pi.root.rglob(f"s-{kind}.jsonl"))
    code, out = _run(planted, "expand", str(session), "--range", "0:2", "--reveal")
    assert code == 0
    got = json.loads(out)
    assert got["revealed"] is True
    assert value in "".join(e["text"] for e in got["entries"])
    code, plain = _run(planted, "expand", str(session), "--range", "0:2")
    assert value not in plain


def test_reveal_refuses_a_changed_file(planted: Kit, tmp_path: Path) -> None:
    session = next(p for p in planted.pi.root.rglob("s-github_pat.jsonl"))
    before = session.read_bytes()
    try:
        session.write_bytes(before.replace(b"user says", b"user SAYS"))
        code, out = _run(planted, "expand", str(session), "--range", "0:2", "--reveal")
        assert code == 6  # answered with an error (store.exits.EXIT_ANSWERED_ERROR)
        assert json.loads(out)["error"]["code"] == "stale_pointer"
        assert PLANTED["github_pat"][1] not in out
    finally:
        session.write_bytes(before)


def test_pipeline_status_counts_redactions_by_kind(planted: Kit) -> None:
    from pipeline.status import collect_status, render_status

    status = collect_status(planted.config)
    counts = status.as_dict()["redactions"]
    for kind in KINDS:
        assert counts.get(kind, 0) >= 3, kind
    assert "redacted    " in render_status(status)


def _no_secret_in(blob: str) -> None:
    for kind, (_, value) in PLANTED.items():
        probe = value[40:80] if kind == "private_key" else value[:24]
        assert probe not in blob, kind


def test_the_server_has_no_secrets_or_reveal_operation() -> None:
    from query.transport import OPS

    assert not {"secrets", "reveal"} & set(OPS)


def test_mcp_answers_with_placeholders_and_offers_no_audit_or_reveal(planted: Kit) -> None:
    from query.mcp import TOOLS, call_tool
    from query.transport import Backend

    assert not [name for name in TOOLS if "secret" in name or "reveal" in name]
    with Backend(planted.config, server="off") as backend:
        page, bad = call_tool(backend, "memory_recall", {"query": "user says", "scope": "global",
                                                         "pageSize": 50}, cwd=CWD)  # fmt: skip
        assert not bad and page["total"] > 0
        blob = orjson.dumps(page).decode()
        for hit in page["hits"]:
            got, bad = call_tool(backend, "memory_expand", hit["follow"]["args"], cwd=CWD)
            assert not bad
            blob += orjson.dumps(got).decode()
        _no_secret_in(blob)
        assert "[REDACTED:" in blob
        session = str(next(planted.pi.root.rglob("s-github_pat.jsonl")))
        refused, bad = call_tool(
            backend, "memory_expand", {"session": session, "indices": [0], "reveal": True}, cwd=CWD
        )
        assert bad and refused["error"]["code"] == "invalid_argument"


def test_the_python_client_answers_with_placeholders(planted: Kit) -> None:
    from query.client import Memory

    memory = Memory(planted.config, cwd=CWD, server="off")
    page = memory.recall_raw(query="user says", scope="global", pageSize=50)
    blob = orjson.dumps(page).decode()
    for hit in page["hits"]:
        blob += orjson.dumps(memory.expand_raw(hit["follow"]["args"])).decode()
    _no_secret_in(blob)
    assert not hasattr(memory, "reveal") and not hasattr(memory, "secrets")


def test_cold_digests_and_the_lexicon_hold_no_secret(tmp_path: Path) -> None:
    kit = Kit(tmp_path / "cold", hotSessions=0)
    for kind, (text, _) in PLANTED.items():
        kit.session(f"s-{kind}", _pi_records(kind, text))
    kit.build()
    assert kit.engine.refresh().lexicon() is not None
    blobs = b"".join(_index_bytes(kit.pi.index)).lower()
    for kind, (_, value) in PLANTED.items():
        for token in value.replace("-", " ").replace("_", " ").split():
            if len(token) >= 12:
                assert token.lower().encode() not in blobs, kind
    page = kit.recall(query="redacted github_pat", scope="global", queryMatch="all")
    assert page["total"] == 1
    kit.close()


@pytest.mark.parametrize("agent", ["pi", "claude", "codex"])
@pytest.mark.parametrize("kind", ["aws_access_token", "private_key", "generic_api_key"])
def test_reveal_works_for_every_agent(planted: Kit, agent: str, kind: str) -> None:
    value = PLANTED[kind][1]
    _, out = _run(planted, "secrets", "--scope", "global")
    row = next(
        r
        for r in json.loads(out)["findings"]
        if r["kind"] == kind and r["session"].startswith(agent + ":")
    )
    last = max(row["entries"])
    code, shown = _run(planted, "expand", row["file"], "--range", f"0:{last}", "--reveal")
    assert code == 0, shown
    assert value in "".join(e["text"] for e in json.loads(shown)["entries"])
