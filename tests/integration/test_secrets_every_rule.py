"""Issue 18, for every rule: a credential of each kind the rule set knows, planted in what the
user says, in a tool call's arguments and in a tool's output, in a Pi, a Claude Code and a
Codex session, indexed by the real pipeline. None of it is in any byte of the index folder,
in recall, expand, the lexicon, `query serve`, the real MCP server over stdio or the Python
client; `query secrets` lists each with its kind, when it was seen and a masked fingerprint;
`query expand --reveal` shows it from the local CLI.

The samples (``tests.rule_samples``) are confirmed against gitleaks' own engine (RE2), so a
rule whose translation breaks shows here as a planted credential that comes through.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from contextlib import ExitStack, redirect_stdout
from typing import Any

import orjson
import pytest

from query import cli
from store.redact import redactor
from store.tokens import tokenize
from tests.helpers import (
    assistant,
    claude_line,
    codex_object_rollout,
    codex_said,
    jsonl,
    tool_result,
    user,
)
from tests.rule_samples import RuleSample, rule_samples
from tests.unit.query.kit import CWD, T0, Kit
from tests.unit.query.test_secrets import _index_bytes

pytestmark = pytest.mark.integration

AGENTS = ("pi", "claude", "codex")


def _samples() -> list[RuleSample]:
    got = rule_samples()
    missing = sorted(rid for rid, s in got.items() if s is None)
    assert not missing, f"no gitleaks-confirmed sample for {missing}"
    return [s for s in got.values() if s is not None]


def _said(s: RuleSample) -> str:
    # No rule id in the text: "bedrock-api-key-" is both a rule's name and its token's head.
    hint = f"for {s.hint}: " if s.hint else ""
    return f"rule {hint}{s.match} ok"


def _pi(samples: list[RuleSample]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {"type": "session", "version": 3, "id": "pi-every-rule",
         "timestamp": "2025-01-01T00:00:00Z", "cwd": CWD},
    ]  # fmt: skip
    parent = None
    t = T0
    for n, s in enumerate(samples):
        u, a, r = f"u{n}", f"a{n}", f"r{n}"
        call = {"id": f"c{n}", "name": "bash", "arguments": {"command": f"deploy {_said(s)}"}}
        out.append(user(u, parent, f"user says {_said(s)}", t))
        out.append(assistant(a, u, "running it", t + 1, call))
        out.append(tool_result(r, a, "bash", f"output:\n{_said(s)}\n", t + 2))
        parent, t = r, t + 3
    return out


def _claude(samples: list[RuleSample]) -> bytes:
    sid = "c0ffee00-0000-4000-8000-000000000018"
    lines: list[dict[str, Any]] = []
    parent = None
    t = T0
    for n, s in enumerate(samples):
        use = {"type": "tool_use", "id": f"t{n}", "name": "Bash",
               "input": {"command": f"deploy {_said(s)}"}}  # fmt: skip
        result = {"type": "tool_result", "tool_use_id": f"t{n}", "content": f"out\n{_said(s)}"}
        lines.append(claude_line("user", f"u{n}", parent, t, f"user says {_said(s)}", session=sid))
        lines.append(
            claude_line(
                "assistant", f"a{n}", f"u{n}", t + 1, [use], message_id=f"m{n}", session=sid
            )  # fmt: skip
        )
        lines.append(claude_line("user", f"r{n}", f"a{n}", t + 2, [result], session=sid))
        parent, t = f"r{n}", t + 3
    return jsonl(lines)


def _codex(samples: list[RuleSample]) -> bytes:
    items: list[dict[str, Any]] = []
    for n, s in enumerate(samples):
        args = json.dumps({"command": ["bash", "-lc", f"deploy {_said(s)}"]})
        items += [
            codex_said("user", f"user says {_said(s)}"),
            {"type": "function_call", "name": "shell", "arguments": args, "call_id": f"k{n}"},
            {"type": "function_call_output", "call_id": f"k{n}", "output": f"out\n{_said(s)}"},
        ]
    return codex_object_rollout("codex-every-rule", items)


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kit]:
    # Two of the three sessions cold: their digests and the lexicon are checked too.
    kit = Kit(tmp_path_factory.mktemp("every-rule"), hotSessions=1)
    samples = _samples()
    kit.session("pi-every-rule", _pi(samples))
    claude = kit.pi.base / "claude" / "-work-proj"
    claude.mkdir(parents=True)
    (claude / "c0ffee00-0000-4000-8000-000000000018.jsonl").write_bytes(_claude(samples))
    codex = kit.pi.base / "codex"
    codex.mkdir()
    (codex / "rollout-2025-05-01-every-rule.json").write_bytes(_codex(samples))
    kit.build()
    yield kit
    kit.close()


def _probes(s: RuleSample) -> list[str]:
    """Pieces of the secret that must not appear anywhere: the whole value and, for a long
    one, each 16-character piece of it (no part of a credential may survive)."""
    value = s.secret.strip().strip("\"'")
    if len(value) <= 16:
        return [value]
    return [value[i : i + 16] for i in range(0, len(value) - 15, 4)]


def _leaks(blob: str, samples: list[RuleSample]) -> list[str]:
    return [s.rule_id for s in samples if any(p in blob for p in _probes(s))]


def _whole(row: dict[str, Any]) -> dict[str, Any] | None:
    """expand's arguments for every entry of a session (it pages: follow ``next``)."""
    last = row["entryCount"] - 1
    return {"session": row["file"], "entryRange": {"first": 0, "last": last}, "maxEntries": 20}


def _run(kit: Kit, *argv: str) -> tuple[int, str]:
    buf = io.StringIO()
    with redirect_stdout(buf):
        code = cli.main([*argv, "--json", "--no-server", "--cwd", CWD, "--config",
                         str(kit.pi.config_path)])  # fmt: skip
    return code, buf.getvalue()


def _session_rows(kit: Kit) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = kit.sessions(scope="global", limit=50)["sessions"]
    assert {r["id"].split(":")[0] for r in rows} >= set(AGENTS), rows
    return rows


def test_every_byte_of_the_index_folder_is_credential_free(planted: Kit) -> None:
    samples = _samples()
    blobs = _index_bytes(planted.pi.index)
    leaked = [s.rule_id for s in samples if any(p.encode() in b for p in _probes(s) for b in blobs)]
    assert leaked == []
    # the check can fail: ordinary words of the same entries are there
    assert any(b"user says" in b or b"deploy" in b for b in blobs)


def test_recall_and_expand_hold_no_credential(planted: Kit) -> None:
    samples = _samples()
    blob = ""
    for query in ("user says", "deploy rule", "output", "redacted"):
        page = planted.recall(query=query, scope="global", pageSize=50)
        assert page["total"] > 0, query
        blob += orjson.dumps(page).decode()
    for row in _session_rows(planted):
        args = _whole(row)
        while args is not None:
            got = planted.expand(**args)
            assert "error" not in got, got
            blob += orjson.dumps(got).decode()
            args = got["next"] and got["next"]["args"]
    assert _leaks(blob, samples) == []
    assert blob.count("[REDACTED:") >= len(samples) * 3


def test_no_credential_is_a_searchable_term_or_in_the_lexicon(planted: Kit) -> None:
    samples = _samples()
    lexicon = planted.engine.refresh().lexicon()
    assert lexicon is not None
    assert lexicon.holders(b"deploy", "active"), "the lexicon holds the entries' words"
    found = []
    for s in samples:
        for term in tokenize(s.secret):
            if len(term) >= 12 and lexicon.holders(term.encode(), "active"):
                found.append((s.rule_id, term))
    assert found == []
    # a recall for the value itself finds nothing (a few values are found through the
    # ordinary words they hold, "password" and the like: their placeholder entry, not them)
    for s in samples[::7]:
        page = planted.recall(query=s.secret, scope="global", pageSize=5)
        shown = [{k: v for k, v in hit.items() if k != "follow"} for hit in page["hits"]]
        assert _leaks(orjson.dumps(shown).decode(), samples) == []  # "follow" echoes the query


def test_query_secrets_lists_every_planted_credential(planted: Kit) -> None:
    samples = _samples()
    code, out = _run(planted, "secrets", "--scope", "global")
    assert code == 0, out
    rows = json.loads(out)["findings"]
    assert _leaks(out, samples) == []
    seen: dict[tuple[str, str], dict[str, Any]] = {}
    for row in rows:
        seen[(row["session"].split(":")[0], row["fingerprint"])] = row
        assert row["kind"] in redactor().kinds
        assert "…" in row["fingerprint"] and row["entries"]
        if not row["session"].startswith("codex:"):  # era-A rollout items carry no time
            assert row["firstSeen"] is not None and row["lastSeen"] >= row["firstSeen"]
    missing = []
    for s in samples:
        # the row for this credential: the one whose fingerprint a redaction of its value
        # gives (the rule that found it first names the kind: a sample of one rule may be
        # taken by a broader one covering the same span)
        _, found = redactor().redact(f"user says {_said(s)}")
        prints = {f.fingerprint for f in found}
        for agent in AGENTS:
            if not any((agent, p) in seen for p in prints):
                missing.append((agent, s.rule_id))
    assert missing == []
    kinds = {row["kind"] for row in rows}
    assert len(kinds) >= len({s.kind for s in samples}) * 0.8, sorted(kinds)


@pytest.mark.parametrize("agent", AGENTS)
def test_reveal_shows_every_credential_from_the_local_cli(planted: Kit, agent: str) -> None:
    samples = _samples()
    row = next(r for r in _session_rows(planted) if r["id"].startswith(agent + ":"))
    text = plain = ""
    for first in range(0, row["entryCount"], 20):
        span = f"{first}:{min(first + 19, row['entryCount'] - 1)}"
        many = ("--range", span, "--max-entries", "20")
        code, shown = _run(planted, "expand", row["file"], *many, "--reveal")
        assert code == 0, shown[:2000]
        text += "".join(e["text"] for e in json.loads(shown)["entries"])
        code, out = _run(planted, "expand", row["file"], *many)
        assert code == 0
        plain += out
    hidden = [s.rule_id for s in samples if s.secret.strip() not in text]
    assert hidden == []
    assert _leaks(plain, samples) == []


def test_the_real_mcp_server_returns_no_credential(planted: Kit) -> None:
    from mcp import ClientSession

    from tests.integration.test_mcp import run_client

    samples = _samples()
    rows = _session_rows(planted)

    async def body(s: ClientSession) -> str:
        names = {t.name for t in (await s.list_tools()).tools}
        assert not [n for n in names if "secret" in n or "reveal" in n]
        out = ""
        page = await s.call_tool("memory_recall", {"query": "user says deploy",
                                                   "scope": "global", "pageSize": 50})  # fmt: skip
        out += json.dumps([c.model_dump() for c in page.content])
        for row in rows:
            args = _whole(row)
            while args is not None:
                got = await s.call_tool("memory_expand", args)
                assert not got.is_error, got
                out += json.dumps([c.model_dump() for c in got.content])
                nxt = (got.structured_content or {}).get("next")
                args = nxt and nxt["args"]
        refused = await s.call_tool(
            "memory_expand", {"session": rows[0]["file"], "indices": [0], "reveal": True}
        )
        assert refused.is_error
        return out

    blob = run_client(planted.pi.config_path, body, "--cwd", CWD)
    assert blob.count("REDACTED:") >= len(samples) * 3
    assert _leaks(blob, samples) == []


def test_query_serve_and_the_python_client_return_no_credential(planted: Kit) -> None:
    from query.client import Memory
    from query.errors import InvalidArgument
    from tests.integration.test_serve import Served, ping, wait_for

    samples = _samples()
    rows = _session_rows(planted)
    server = Served(planted.pi.config_path)
    closing = ExitStack()
    try:
        wait_for(lambda: ping(planted.config) is not None or server.proc.poll() is not None)
        assert server.proc.poll() is None
        memory = Memory(planted.config, cwd=CWD, server="require")
        closing.callback(memory.close)
        blob = orjson.dumps(memory.recall_raw(query="user says", scope="global",
                                              pageSize=50)).decode()  # fmt: skip
        for row in rows:
            args = _whole(row)
            while args is not None:
                got = memory.expand_raw(args)
                assert "error" not in got, got
                blob += orjson.dumps(got).decode()
                args = got["next"] and got["next"]["args"]
        assert blob.count("[REDACTED:") >= len(samples) * 3
        assert _leaks(blob, samples) == []
        with pytest.raises(InvalidArgument, match="reveal"):
            memory.expand_raw({"session": rows[0]["file"], "indices": [0], "reveal": True})
    finally:
        closing.close()
        assert server.stop() == 0


def test_pipeline_status_counts_the_redactions_of_every_kind(planted: Kit) -> None:
    from pipeline.status import collect_status, render_status

    status = collect_status(planted.config)
    counts = status.as_dict()["redactions"]
    short = []
    for s in _samples():
        _, found = redactor().redact(f"user says {_said(s)}")
        # said by the user, in the arguments and in the output, in each of the three agents
        if not found or counts.get(found[0].kind, 0) < 9:
            short.append((s.rule_id, counts.get(found[0].kind if found else "", 0)))
    assert short == []
    assert "redacted" in render_status(status)
