"""The Oh My Pi adapter: Pi's format read by Pi's code, plus what omp's writer adds.

Fixtures (``tests/data/omp/sessions``) are hand-written after omp 18.2.3's writer: a session
with every entry type and message role omp writes, a ``task`` subagent's transcript and an
advisor transcript in the session's artifacts folder.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from stages.agents import adapter
from stages.families import tool_family, tool_identity
from stages.lineage import lineage
from stages.normalize import normalize
from stages.omp.source import read_omp
from stages.omp.tools import mcp_parts
from stages.parse import parse
from stages.policy import Policy
from stages.read import read_session
from stages.source import SourceSession
from store.records import NormalizedEntry

DATA = Path(__file__).parents[2] / "data" / "omp" / "sessions" / "-work-proj"
STEM = "2026-05-01T10-00-00-000Z_01966a00-0000-7000-8000-00000000a001"
MAIN = DATA / f"{STEM}.jsonl"
SUBAGENT = DATA / STEM / "0-Scout.jsonl"
ADVISOR = DATA / STEM / "__advisor.jsonl"


def read(path: Path) -> SourceSession:
    return read_session(path.read_bytes(), str(path), "omp")


def entries(path: Path, policy: Policy | None = None) -> list[NormalizedEntry]:
    session = read(path)
    return list(normalize(session, lineage(session, "active"), policy or Policy()).entries)


def found(items: list[NormalizedEntry], word: str) -> NormalizedEntry:
    hits = [e for e in items if word in e.text]
    assert len(hits) == 1, (word, [e.text for e in hits])
    return hits[0]


def test_the_title_slot_is_metadata_and_the_header_follows_it() -> None:
    first = MAIN.read_bytes().split(b"\n", 1)[0] + b"\n"
    assert len(first) == 256 and orjson.loads(first)["type"] == "title"
    session = read(MAIN)
    # Then the header is the session's, nothing is missing or unknown, and lines keep their
    # numbers in the file (the slot is line 1, the header line 2)
    assert session.agent == "omp"
    assert session.session_id == "01966a00-0000-7000-8000-00000000a001"
    assert session.cwd == "/work/proj"
    assert session.header is not None and session.header["type"] == "session"
    assert session.reasons == ()
    assert session.unknown == ()
    assert session.writer_version == "3"
    assert session.records[0].line == 3
    assert all(r.kind != "title" for r in session.records)
    assert not session.sidechain


def test_a_file_written_before_the_slot_reads_the_same() -> None:
    data = MAIN.read_bytes()
    without = data.split(b"\n", 1)[1]
    a, b = read(MAIN), read_session(without, str(MAIN), "omp")
    assert [r.value for r in a.records] == [r.value for r in b.records]
    assert (a.session_id, a.reasons, a.unknown) == (b.session_id, b.reasons, b.unknown)


def test_a_title_line_anywhere_else_is_drift() -> None:
    data = MAIN.read_bytes()
    slot = data.split(b"\n", 1)[0]
    moved = data.split(b"\n", 1)[1] + slot + b"\n"
    session = read_session(moved, str(MAIN), "omp")
    assert dict(session.unknown) == {"line:title": 1}


def test_types_pi_writes_but_omp_does_not_are_drift() -> None:
    data = MAIN.read_bytes() + b'{"type":"usage","id":"u1","parentId":null}\n'
    assert dict(read_session(data, str(MAIN), "omp").unknown) == {"line:usage": 1}
    # and Pi's own reader counts omp's additions as drift: the two are told apart
    pi = read_session(MAIN.read_bytes(), str(MAIN), "pi")
    assert "line:model_usage" in dict(pi.unknown)
    assert "line:title" in dict(pi.unknown)


def test_conversation_reads_as_pi_reads_it_with_omps_identity() -> None:
    items = entries(MAIN)
    assert {e.agent for e in items} == {"omp"}
    assert found(items, "OMPFLAKYQ9 test fail").role == "user"
    assert found(items, "OMPANSWERQ9").role == "assistant"
    call = found(items, "Tool: bash")
    assert (call.tool, call.ref, call.provider, call.action, call.family) == (
        "bash", "omp.bash", "omp", "bash", "shell",
    )  # fmt: skip
    result = found(items, "SHELLFAILQ9")
    assert (result.role, result.outcome, result.is_error, result.family) == (
        "toolResult", "failed", True, "shell",
    )  # fmt: skip
    read_call = found(items, "Tool: read")
    assert read_call.files_touched == ("/work/proj/tests/test_flaky.py",)
    assert read_call.family == "read"
    assert found(items, "READBODYQ9").outcome == "succeeded"
    assert found(items, "scout says").family == "subagent"
    assert found(items, "CUSTOMQ9").role == "custom"


def test_omps_injected_prompts_and_records_without_conversation_give_no_entry() -> None:
    items = entries(MAIN)
    texts = "\n".join(e.text for e in items)
    assert "DEVREMINDERQ9" not in texts  # developer: omp's own reminders
    assert "THINKQ9" not in texts  # thinking only with index_thinking
    assert "opaque" not in texts  # redactedThinking never
    roles = {e.role for e in items}
    assert "developer" not in roles
    kinds = {e.type for e in items}
    assert kinds <= {"message", "custom_message", "compaction", "branch_summary"}
    with_thinking = entries(MAIN, Policy(index_thinking=True))
    assert found(with_thinking, "THINKQ9").role == "assistant"


def test_python_executions_read_like_bash_executions() -> None:
    items = entries(MAIN)
    ok = found(items, "PYCODEQ9")
    assert ok.role == "pythonExecution"
    assert ok.text == "python$ print('PYCODEQ9') [exit 0]\nPYOUTQ9"
    assert (ok.tool, ok.ref, ok.outcome, ok.is_error) == ("eval", "omp.eval", "succeeded", False)
    assert ok.operation_address == f"{ok.entry_id}/python"
    bad = found(items, "SystemExit")
    assert bad.text == "python$ raise SystemExit(2) [exit 2]"
    assert (bad.outcome, bad.is_error) == ("failed", True)
    quiet = found(entries(MAIN, Policy(index_tool_output=False)), "PYCODEQ9")
    assert quiet.text == "python$ print('PYCODEQ9') [exit 0]"


def test_a_file_mention_names_its_files() -> None:
    mention = found(entries(MAIN), "MENTIONQ9")
    assert mention.role == "fileMention"
    assert mention.text == "@/work/proj/NOTES.md\nMENTIONQ9 notes body"
    assert mention.files_touched == ("/work/proj/NOTES.md",)
    quiet = [e for e in entries(MAIN, Policy(index_tool_output=False)) if e.role == "fileMention"]
    assert [e.text for e in quiet] == ["@/work/proj/NOTES.md"]


def test_mcp_calls_and_results_have_the_servers_identity() -> None:
    items = entries(MAIN)
    call = found(items, "Tool: mcp__needle_lookup")
    result = found(items, "NEEDLEQ9")
    for e in (call, result):
        assert (e.ref, e.provider, e.action, e.family) == (
            "needle.lookup", "needle", "lookup", "mcp",
        )  # fmt: skip
    assert result.outcome == "succeeded"


def test_omp_mints_mcp_names_with_one_underscore() -> None:
    assert mcp_parts("mcp__needle_lookup") == ("needle", "lookup")
    assert mcp_parts("mcp__needle_deep_lookup") == ("needle", "deep_lookup")
    # a model primed on Claude Code's convention: omp resolves it to the same tool
    assert mcp_parts("mcp__needle__lookup") == ("needle", "lookup")
    for name in ("mcp__needle", "mcp___x", "needle_lookup", "mcp__"):
        assert mcp_parts(name) is None, name
    assert tool_identity("omp", "mcp__gh_issues") == ("gh.issues", "gh", "issues")
    # Pi's own names are not split omp's way
    assert tool_family("pi", "mcp__needle_lookup") == "other"


@pytest.mark.parametrize(
    ("tool", "family"),
    [
        ("bash", "shell"),
        ("read", "read"),
        ("edit", "edit"),
        ("ast_edit", "edit"),
        ("write", "write"),
        ("grep", "search"),
        ("glob", "search"),
        ("ast_grep", "search"),
        ("find", "search"),
        ("task", "subagent"),
        ("web_search", "web"),
        ("todo", "other"),
        ("eval", "other"),
        ("Bash", "other"),
    ],
)
def test_omps_tools_have_their_families(tool: str, family: str) -> None:
    assert tool_family("omp", tool) == family


def test_a_task_subagent_is_a_sidechain_of_its_parent() -> None:
    parent = read(MAIN)
    sub = read(SUBAGENT)
    assert sub.sidechain
    assert sub.parent_session == parent.session_id
    assert sub.extra["agent_id"] == "0-Scout"
    items = entries(SUBAGENT)
    assert items and all(e.sidechain for e in items)
    assert {e.agent_id for e in items} == {"0-Scout"}
    texts = "\n".join(e.text for e in items)
    assert "SUBTASKQ9" in texts
    assert "SYSPROMPTQ9" not in texts  # session_init holds the subagent's system prompt
    assert read(SUBAGENT).unknown == ()


def test_an_advisor_transcript_in_the_artifacts_folder_is_a_sidechain_too() -> None:
    advisor = read(ADVISOR)
    assert advisor.sidechain
    assert advisor.parent_session == read(MAIN).session_id
    assert advisor.extra["agent_id"] == "__advisor"


def test_a_fork_keeps_its_parent_session_as_written() -> None:
    data = MAIN.read_bytes().replace(
        b'"cwd":"/work/proj"}', b'"cwd":"/work/proj","parentSession":"/x/other.jsonl"}', 1
    )
    session = read_session(data, str(MAIN), "omp")
    assert session.parent_session == "/x/other.jsonl"
    assert not session.sidechain


def test_appends_take_the_tail_path() -> None:
    omp = adapter("omp")
    assert omp.tail is not None
    whole = read(MAIN)
    assert omp.tail.ready(whole)
    # the tail reader sees the header, then only the new lines
    header = MAIN.read_bytes().split(b"\n")[1] + b"\n"
    line = orjson.dumps({"type": "message", "id": "n1", "parentId": "e027",
                         "message": {"role": "user", "content": "more"}}) + b"\n"  # fmt: skip
    tail = read_omp(parse(header + line), str(MAIN))
    assert omp.tail.ready(tail) and omp.tail.local(tail)
    assert [r.id for r in tail.records] == ["n1"]


def _shell_result(tmp_path: Path, command: str, exit_code: int, is_error: bool) -> NormalizedEntry:
    """The fixture's bash call rewritten to run *command*, its result exiting *exit_code*."""
    data = MAIN.read_bytes().replace(b"pytest -k OMPFLAKYQ9", command.encode())
    data = data.replace(
        b'"details":{"exitCode":1,"wallTimeMs":10},"isError":true',
        b'"details":{"exitCode":%d,"wallTimeMs":10},"isError":%s'
        % (exit_code, b"true" if is_error else b"false"),
    )
    path = tmp_path / MAIN.name
    path.write_bytes(data)
    return found(entries(path), "SHELLFAILQ9")


def test_a_shell_results_typed_exit_code_follows_the_shared_rule(tmp_path: Path) -> None:
    # a search exiting 1 found nothing: omp writes isError, yet the call did what it was asked
    grep = _shell_result(tmp_path, "grep -rn OMPFLAKYQ9 src", 1, True)
    assert (grep.outcome, grep.is_error) == ("succeeded", False)
    # and its text (what a hit's snippet shows) is not marked an error either
    assert grep.text.startswith("toolResult(bash): ") and "[error]" not in grep.text
    # any other non-zero exit is a failure, whatever isError says, and marked so
    ls = _shell_result(tmp_path, "ls missing", 2, False)
    assert (ls.outcome, ls.is_error) == ("failed", True)
    assert ls.text.startswith("toolResult(bash) [error]: ")
    # and a search's own error (2) too
    assert _shell_result(tmp_path, "rg OMPFLAKYQ9", 2, True).outcome == "failed"
    assert _shell_result(tmp_path, "grep -q x f", 0, False).outcome == "succeeded"


def test_pi_results_keep_their_is_error() -> None:
    """Pi records no exit code on a result: its ``isError`` stays the outcome."""
    data = MAIN.read_bytes().split(b"\n", 1)[1].replace(b"pytest -k OMPFLAKYQ9", b"grep x f")
    session = read_session(data, str(MAIN), "pi")
    items = list(normalize(session, lineage(session, "active"), Policy()).entries)
    result = found(items, "SHELLFAILQ9")
    assert (result.outcome, result.is_error) == ("failed", True)
    assert result.text.startswith("toolResult(bash) [error]: ")


def test_an_exit_1_whose_call_is_not_in_the_append_leaves_the_tail_path() -> None:
    omp = adapter("omp")
    assert omp.tail is not None
    lines = MAIN.read_bytes().split(b"\n")
    header = lines[1] + b"\n"
    call, result = lines[7] + b"\n", lines[9] + b"\n"
    assert b'"toolCall"' in call and b'"exitCode":1' in result
    alone = read_omp(parse(header + result), str(MAIN))
    assert not omp.tail.local(alone)
    both = read_omp(parse(header + call + result), str(MAIN))
    assert omp.tail.local(both)
    exit_0 = result.replace(b'"exitCode":1', b'"exitCode":0')
    assert omp.tail.local(read_omp(parse(header + exit_0), str(MAIN)))
