"""Issues 17 and 18 together: what the archive keeps and what is served from it.

The archive is a copy of the session files (the bytes that were indexed, so any credential
in them too: README "History that outlives its source" and runbook §6a say so); the index
beside it stays credential-free when a session is read from that copy, after a rebuild from
it too, and nothing served from an archived session (recall, expand, MCP, the Python client,
export as md/jsonl/html) holds a credential. Only the local CLI's ``expand --reveal`` and
``export --format source`` give the original bytes back.
"""

from __future__ import annotations

from pathlib import Path

import orjson

from pipeline.catchup import catch_up
from query.client import Memory
from query.engine import Engine
from query.export import export
from query.mcp import call_tool
from query.transport import Backend
from store.writer import StoreWriter
from tests.helpers import claude_line
from tests.secret_samples import PLANTED
from tests.unit.archive.grep import files_holding
from tests.unit.archive.kit import ClaudeRoot, entry_hits

KINDS = sorted(PLANTED)
SID = "5e55107a-0000-4000-8000-0000005ec2e7"


def _session() -> list[dict[str, object]]:
    lines: list[dict[str, object]] = []
    parent = None
    for n, kind in enumerate(KINDS):
        text, _ = PLANTED[kind]
        use = {"type": "tool_use", "id": f"t{n}", "name": "Bash",
               "input": {"command": f"deploy {text}"}}  # fmt: skip
        out = {"type": "tool_result", "tool_use_id": f"t{n}", "content": f"out\n{text}"}
        lines += [
            claude_line("user", f"u{n}", parent, 1_000 + 3 * n, f"zebrafinch {text}", session=SID),
            claude_line(
                "assistant", f"a{n}", f"u{n}", 1_001 + 3 * n, [use], message_id=f"m{n}", session=SID
            ),  # fmt: skip
            claude_line("user", f"r{n}", f"a{n}", 1_002 + 3 * n, [out], session=SID),
        ]
        parent = f"r{n}"
    return lines


def _probe(kind: str) -> str:
    value = PLANTED[kind][1]
    return value[40:80] if kind == "private_key" else value[:24]


def _leaked(folder: Path) -> list[str]:
    return [k for k in KINDS if files_holding(folder, _probe(k))]


def test_an_archived_session_serves_no_credential_and_the_archive_keeps_them(
    tmp_path: Path,
) -> None:
    root = ClaudeRoot(tmp_path)
    config = root.write_config()
    path = root.session("s1", _session())
    catch_up(config)
    path.unlink()
    catch_up(config)
    hits = entry_hits(config, "zebrafinch")
    assert hits and all(h["archived"] for h in hits)

    assert _leaked(config.index_dir) == []
    # the archive is a copy of the source: the credentials are in it, as documented
    assert _leaked(config.archive_dir) == KINDS

    served = ""
    with Engine(config) as engine:
        rows = engine.sessions({"scope": "global"}, cwd="/")["sessions"]
        [row] = [r for r in rows if r["file"] == str(path)]
        assert row["archived"] is True
        args: dict[str, object] | None = {
            "session": str(path), "entryRange": {"first": 0, "last": row["entryCount"] - 1},
            "maxEntries": 20,
        }  # fmt: skip
        while args is not None:
            got = engine.expand(args, cwd="/")
            assert "error" not in got, got
            served += orjson.dumps(got).decode()
            args = got["next"] and got["next"]["args"]
        for fmt in ("md", "jsonl", "html"):
            data = export(engine.refresh(), str(path), fmt=fmt, branches="active", cwd="/",
                          roots=engine.roots, freshness=engine.freshness).data  # fmt: skip
            served += data.decode() if isinstance(data, bytes) else data
        source = export(engine.refresh(), str(path), fmt="source", branches="active", cwd="/",
                        roots=engine.roots, freshness=engine.freshness).data  # fmt: skip
    with Backend(config, server="off") as backend:
        page, bad = call_tool(backend, "memory_recall", {"query": "zebrafinch",
                                                         "scope": "global"}, cwd="/")  # fmt: skip
        assert not bad and page["hits"]
        served += orjson.dumps(page).decode()
        for hit in page["hits"]:
            got, bad = call_tool(backend, "memory_expand", hit["follow"]["args"], cwd="/")
            assert not bad
            served += orjson.dumps(got).decode()
    memory = Memory(config, cwd="/", server="off")
    try:
        served += orjson.dumps(memory.recall_raw(query="zebrafinch", scope="global")).decode()
    finally:
        memory.close()
    assert served.count("[REDACTED:") >= len(KINDS) * 3
    assert [k for k in KINDS if _probe(k) in served] == []
    # the local CLI's source export is the archived bytes, credentials and all
    assert all(_probe(k).encode() in source for k in KINDS)

    StoreWriter(config.index_dir).wipe()  # `pipeline rebuild`: from the archive's copy
    catch_up(config)
    assert entry_hits(config, "zebrafinch")
    assert _leaked(config.index_dir) == []
