"""Issue 3 acceptance: structural totals equal a count made without our stages.

The count here reads the raw Pi JSONL with the standard library only: it walks each file's
active path (last entry with an id, parents followed, the last record of an id wins) and
counts the records a user would call "a failed bash call": a bash run with a non-zero exit,
a ``bash`` tool result flagged as an error, and a failed ``pi.bash`` operation inside a valid
Fabric trace or branch-summary fact (validity as the generator recorded it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pipeline.catchup import catch_up
from query.engine import Engine
from tests.helpers import generated

pytestmark = pytest.mark.integration


def active_records(path: Path) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    for line in path.read_bytes().splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict) and value.get("type") != "session":
            records.append(value)
    by_id = {r["id"]: r for r in records if isinstance(r.get("id"), str)}
    leaf = next((r for r in reversed(records) if isinstance(r.get("id"), str)), None)
    path_records: list[dict[str, Any]] = []
    seen: set[str] = set()
    node = by_id.get(leaf["id"]) if leaf else None
    while node is not None and node["id"] not in seen:
        seen.add(node["id"])
        path_records.append(node)
        parent = node.get("parentId")
        node = by_id.get(parent) if isinstance(parent, str) else None
    return path_records


def failed_bash(record: dict[str, Any], valid_traces: set[tuple[str, str]], file: str) -> int:
    n = 0
    message = record.get("message") or {}
    role = message.get("role")
    if role == "bashExecution":
        code = message.get("exitCode")
        if not message.get("cancelled") and isinstance(code, int) and code != 0:
            n += 1
    if role == "toolResult":
        if message.get("toolName") == "bash" and message.get("isError") is True:
            n += 1
        trace = (message.get("details") or {}).get("trace")
        if message.get("toolName") == "fabric_exec" and (file, record["id"]) in valid_traces:
            for op in trace["operations"]:
                if op.get("ref") == "pi.bash" and op.get("outcome") == "failed":
                    n += 1
    if record.get("type") == "branch_summary":
        details = record.get("details") or {}
        if details.get("kind") == "pi-fabric.branch-summary":
            for fact in details.get("facts", []):
                if fact.get("kind") == "operation" and fact.get("tool") == "bash":
                    n += fact.get("outcome") == "failed"
    return n


def test_failed_bash_total_equals_an_independent_count(tmp_path: Path) -> None:
    manifest, config = generated(
        tmp_path, sessions=40, mean_kb=10, seed=11, agents=("pi",), hot_sessions=20
    )
    catch_up(config, processes=1)
    valid = {(t.file, t.entry_id) for t in manifest.fabric_traces if t.valid}
    expected = 0
    for s in manifest.sessions:
        for record in active_records(tmp_path / "corpus" / s.file):
            expected += failed_bash(record, valid, s.file)
    assert expected > 0
    with Engine(config) as engine:
        page = engine.recall(
            {"scope": "global", "tool": "bash", "outcome": "failed", "pageSize": 50}, cwd="/"
        )
        counted = 0
        kinds: set[str] = set()
        while True:
            for hit in page["hits"]:
                kinds.add(hit["kind"])
                counted += 1 if hit["kind"] == "entry" else hit["matchedStructuralEntries"]
            if page["next"] is None:
                break
            page = engine.call(page["next"], cwd="/")
    assert counted == expected
    assert kinds == {"entry", "session"}  # hot entries and cold address tuples both counted
    assert page["coverage"]["complete"] is True
