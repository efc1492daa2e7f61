from __future__ import annotations

from pathlib import Path

from pipeline.indexer import build_index
from tests.unit.archive.kit import ClaudeRoot, call, claude_session, entry_hits, recall


def test_deleted_session_stays(tmp_path: Path) -> None:
    root = ClaudeRoot(tmp_path)
    config = root.write_config()
    path = root.session("s1", claude_session("zanzibarite"))
    build_index(config)
    before = entry_hits(config, "zanzibarite")
    assert before
    path.unlink()
    report = build_index(config)
    print(report.as_dict())
    page = recall(config, "zanzibarite")
    print(page)
    hits = entry_hits(config, "zanzibarite")
    assert hits
    print(call(config, hits[0]["follow"]))
