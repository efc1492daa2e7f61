"""`query export`: one session as Markdown, self-contained HTML, JSON lines or its bytes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from pipeline.catchup import catch_up
from query.engine import Engine
from query.export import ExportError, export
from tests.helpers import jsonl
from tests.unit.archive.kit import ClaudeRoot, claude_session

WORD = "marmotlith"


def _export(config, target: str, fmt: str, branches: str = "active") -> bytes:
    with Engine(config) as engine:
        return export(
            engine.refresh(), target, fmt=fmt, branches=branches, cwd="/",
            roots=engine.roots, freshness=engine.freshness,
        ).data  # fmt: skip


@pytest.fixture
def archived(tmp_path: Path):
    root = ClaudeRoot(tmp_path)
    config = root.write_config()
    lines = claude_session(WORD)
    path = root.session("s1", lines)
    catch_up(config)
    path.unlink()
    catch_up(config)
    return config, path, jsonl(lines)


def test_jsonl_marks_tool_calls_outcomes_and_says_archived(archived) -> None:
    config, path, _ = archived
    rows = [orjson.loads(line) for line in _export(config, str(path), "jsonl").splitlines()]
    head, entries = rows[0], rows[1:]
    assert head["kind"] == "session" and head["archived"] is True
    assert head["entryCount"] == len(entries) == 8
    calls = [e for e in entries if e.get("tool") == "Bash" and e["role"] == "assistant"]
    results = [e for e in entries if e.get("outcome")]
    assert calls and all(e["family"] == "shell" for e in calls)
    assert results and all(e["outcome"] == "failed" for e in results)
    assert any(WORD in e["text"] for e in entries)


def test_source_is_the_exact_bytes_from_the_archive(archived) -> None:
    config, path, original = archived
    assert _export(config, str(path), "source") == original


def test_html_is_one_self_contained_file(archived) -> None:
    config, path, _ = archived
    page = _export(config, "claude:5e55107a-0000-4000-8000-00000000beef", "html").decode()
    assert page.startswith("<!doctype html>") and page.rstrip().endswith("</html>")
    assert WORD in page and "Archived" in page
    lowered = page.lower()
    for outside in ("<script", "src=", "href=", "http://", "https://", "@import", "url("):
        assert outside not in lowered  # nothing to fetch: it reads offline
    assert page.count("<article") == 8 and "outcome failed" in page


def test_markdown_fences_hold_any_backticks(tmp_path: Path) -> None:
    root = ClaudeRoot(tmp_path)
    config = root.write_config()
    lines = claude_session("```nested``` fence")
    root.session("s1", lines)
    catch_up(config)
    text = _export(config, str(root.root / "-work-proj" / "s1.jsonl"), "md").decode()
    assert text.startswith("# claude:")
    assert "````" in text  # a fence longer than the longest run inside it
    assert "tool Bash (shell)" in text and "outcome failed" in text


def test_unknown_sessions_are_answered_errors(archived) -> None:
    config, _, _ = archived
    with pytest.raises(ExportError) as caught:
        _export(config, "no-such-session", "md")
    assert caught.value.code == "session_not_found"


def test_the_cli_writes_a_file(archived, tmp_path: Path) -> None:
    config, path, _ = archived
    out = tmp_path / "s.html"
    done = subprocess.run(
        [sys.executable, "-m", "query", "export", str(path), "--format", "html",
         "--out", str(out), "--config", str(config.path)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "archived" in done.stderr and out.read_text().startswith("<!doctype html>")
    missing = subprocess.run(
        [sys.executable, "-m", "query", "export", "nope", "--config", str(config.path)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert missing.returncode == 6 and "session_not_found" in missing.stderr


def test_reveal_reads_the_archived_copy(tmp_path: Path) -> None:
    from tests.secret_samples import PLANTED

    text, value = PLANTED["aws_access_token"]
    root = ClaudeRoot(tmp_path)
    config = root.write_config()
    path = root.session("s1", claude_session(f"x {text}"))
    catch_up(config)
    path.unlink()
    catch_up(config)
    argv = [sys.executable, "-m", "query", "expand", str(path), "--range", "0:0", "--json",
            "--no-server", "--config", str(config.path)]  # fmt: skip
    hidden = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    assert value not in hidden and "REDACTED" in hidden
    shown = subprocess.run([*argv, "--reveal"], capture_output=True, text=True, check=True)
    assert value in shown.stdout


def test_subagents_are_marked_and_a_deleted_subagent_keeps_its_sidecar(tmp_path: Path) -> None:
    from tests.helpers import claude_line

    def said(uuid: str, parent: str | None, ms: int, words: str, agent: str | None = None):
        kind = "user" if uuid.startswith("u") else "assistant"
        content: object = words if kind == "user" else [{"type": "text", "text": words}]
        line = claude_line(kind, uuid, parent, ms, content, message_id=f"m-{uuid}")
        if agent is not None:
            line["isSidechain"] = True
            line["agentId"] = agent
        return line

    root = ClaudeRoot(tmp_path)
    config = root.write_config()
    sid = "c0ffee00-0000-4000-8000-000000000001"
    main = root.session(sid, [said("u1", None, 1, "chase it"), said("a1", "u1", 2, "delegating"),
                              said("u2", None, 3, "inline search", agent="inl1")])  # fmt: skip
    sub = root.root / "-work-proj" / sid / "subagents" / "agent-f1le.jsonl"
    sub.parent.mkdir(parents=True)
    sub.write_bytes(jsonl([said("u9", None, 5, "file search", agent="f1le")]))
    meta = sub.with_name("agent-f1le.meta.json")
    meta.write_bytes(orjson.dumps({"agentType": "Explore", "toolUseId": "toolu_7"}))
    catch_up(config)
    text = _export(config, str(main), "md").decode()
    assert "subagent inl1" in text
    before = _export(config, str(sub), "jsonl")
    sub.unlink()
    meta.unlink()  # the sidecar goes with it: the archive kept what it said
    catch_up(config)
    after = [orjson.loads(line) for line in _export(config, str(sub), "jsonl").splitlines()]
    assert after[0]["archived"] is True
    assert [e["parentToolCallId"] for e in after[1:]] == ["toolu_7"]
    assert [orjson.loads(x) for x in before.splitlines()][1:] == after[1:]
