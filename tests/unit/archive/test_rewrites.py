"""A source rewritten so that earlier entries are gone keeps its old version; one that keeps
them does not; the cap's coverage reason."""

from __future__ import annotations

from pathlib import Path

from pipeline.catchup import catch_up
from store.reader import open_snapshot
from tests.helpers import jsonl
from tests.unit.archive.kit import ClaudeRoot, call, claude_session, entry_hits, recall


def _paths(config) -> dict[str, bool]:
    return {s.path: s.archived for s in open_snapshot(config.index_dir).manifest.sessions}


def test_a_rewrite_that_loses_entries_keeps_the_old_version(tmp_path: Path) -> None:
    root = ClaudeRoot(tmp_path)
    config = root.write_config()
    path = root.session("s1", claude_session("okapinium", turns=3))
    catch_up(config)
    # the file now holds another conversation: the old one's entries are gone from it
    path.write_bytes(jsonl(claude_session("giraffoid", turns=1)))
    catch_up(config)
    paths = _paths(config)
    [old] = [p for p in paths if p != str(path)]
    assert old.startswith(f"{path}@archived-") and paths[old] and not paths[str(path)]
    hits = entry_hits(config, "okapinium")
    assert hits and all(h["archived"] for h in hits)
    assert all(h["follow"]["args"]["session"] == old for h in hits)
    assert "error" not in call(config, hits[0]["follow"])
    assert entry_hits(config, "giraffoid")  # the new version, live


def test_a_rewrite_that_keeps_every_entry_replaces_the_copy(tmp_path: Path) -> None:
    root = ClaudeRoot(tmp_path)
    config = root.write_config()
    lines = claude_session("okapinium", turns=2)
    path = root.session("s1", lines)
    catch_up(config)
    # the same entries, written again with a record more in the middle (not an append)
    path.write_bytes(jsonl([*lines[:2], {"type": "summary", "summary": "x"}, *lines[2:]]))
    catch_up(config)
    assert _paths(config) == {str(path): False}


def test_a_copy_cut_short_by_the_cap_says_archive_full(tmp_path: Path) -> None:
    root = ClaudeRoot(tmp_path)
    # just over a MiB: the first version fits, what is appended after it does not
    config = root.write_config("[archive]\nmaxBytes = 1048576\n")
    lines = claude_session("okapinium", turns=1)
    path = root.session("s1", lines)
    catch_up(config)
    import os

    filler = {"type": "user", "message": {"role": "user", "content": os.urandom(1_200_000).hex()}}
    with path.open("ab") as f:
        f.write(jsonl([filler]))
    catch_up(config)
    state = open_snapshot(config.index_dir).session(str(path))
    assert state is not None and state.archive == "archive_full"
    from pipeline.status import collect_status

    assert collect_status(config).archive["notKeptSessions"] == [str(path)]
    path.unlink()
    catch_up(config)
    page = recall(config, "okapinium")
    assert page["hits"] and "archive_full" in page["coverage"]["reasons"]
