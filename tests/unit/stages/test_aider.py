"""The Aider adapter on a history its real writer wrote (``tests/data/aider/proj``: aider
0.86.2 driven by the conformance suite, three runs in one folder), and on the line kinds
``aider/io.py`` writes."""

from __future__ import annotations

from pathlib import Path

from stages.agents import adapter
from stages.aider.history import parse_history
from stages.aider.normalize import command_of, edited_files
from stages.aider.source import session_id
from stages.lineage import lineage
from stages.normalize import normalize
from stages.policy import Policy
from stages.read import read_session
from stages.source import SourceSession
from store.reasons import MISSING_SESSION_HEADER
from store.records import NormalizedEntry

HISTORY = Path(__file__).parents[2] / "data" / "aider" / "proj" / ".aider.chat.history.md"


def read(data: bytes | None = None, path: Path = HISTORY) -> SourceSession:
    return read_session(HISTORY.read_bytes() if data is None else data, str(path), "aider")


def entries(session: SourceSession, policy: Policy | None = None) -> list[NormalizedEntry]:
    return list(normalize(session, lineage(session, "active"), policy or Policy()).entries)


def test_the_history_file_is_found_by_its_name_and_read_whole() -> None:
    files = adapter("aider").files
    assert files.matches(".aider.chat.history.md")
    assert not files.matches(".aider.input.history") and not files.matches("notes.md")
    assert files.read_whole(str(HISTORY))
    assert adapter("aider").default_root == ""  # no central folder: configured roots only


def test_three_runs_make_one_session_of_typed_entries() -> None:
    session = read()
    assert session.session_id == session_id(str(HISTORY))
    assert session.cwd == str(HISTORY.parent)
    assert session.reasons == ()
    assert [r.kind for r in session.records].count("run") == 3
    found = entries(session)
    assert [e.role for e in found] == [
        "custom", "user", "assistant", "custom",
        "custom", "bashExecution", "custom",
        "custom", "bashExecution", "custom",
    ]  # fmt: skip
    prompt, reply = found[1], found[2]
    assert prompt.text == "Set VALUE to 2 in notes.py PROMPTAIDERQ7"
    assert reply.files_touched == ("notes.py",) and "FINALAIDERQ7" in reply.text
    assert reply.text.endswith(">>>>>>> REPLACE\n```")  # the marker is the reply's, not a quote
    run, bang = found[5], found[8]
    assert (run.tool, run.family, run.outcome) == ("run", "shell", None)
    assert run.text == "/run echo AIDERRUNQ7; exit 3" and bang.text == "!echo AIDERBANGQ7"
    assert (bang.tool, bang.family) == ("run", "shell")
    # every entry carries its run's start (aider writes local time without a zone)
    assert found[0].timestamp is not None and found[0].timestamp < found[-1].timestamp  # type: ignore[operator]


def test_notices_are_tool_output() -> None:
    found = entries(read(), Policy(index_tool_output=False))
    assert [e.role for e in found] == ["user", "assistant", "bashExecution", "bashExecution"]


def test_line_kinds_follow_the_writer() -> None:
    data = (
        b"\n# aider chat started at 2026-01-02 03:04:05\n\n"
        b"> Aider v0.86.2  \n>  \n> second notice line  \n\n"
        b"#### first line  \n#### second line  \n\n"
        b"Reply text\n\n> a quote the model wrote outside a fence  \n\n"
        b"```diff\n> quoted inside a fence\n```\n\n"
        b"#### <blank>  \n\n"
        b"#### \xff/ask why  \n"
    )
    values = [r.value for r in parse_history(data).records]
    assert [v["type"] for v in values] == [
        "run", "notice", "user", "assistant", "notice", "assistant", "user"
    ]  # fmt: skip
    assert values[0]["started"] == "2026-01-02 03:04:05"
    assert values[1]["text"] == "Aider v0.86.2\n\nsecond notice line"
    assert values[2]["text"] == "first line\nsecond line"
    assert values[5]["text"] == "```diff\n> quoted inside a fence\n```"
    assert values[6]["text"] == "\ufffd/ask why"  # not UTF-8: replaced, never a crash
    assert command_of("/ask why") == "ask" and command_of("!ls") == "run"
    assert command_of("/read_only x") == "read-only" and command_of("plain") is None


def test_edit_blocks_name_their_files_as_aiders_parser_finds_them() -> None:
    reply = (
        "src/a.py\n```python\n<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE\n```\n\n"
        "```python\n**src/b.py**\n<<<<<<< SEARCH\n=======\nz\n>>>>>>> REPLACE\n```\n"
        "src/a.py\n```python\n<<<<<<< SEARCH\ny\n=======\nw\n>>>>>>> REPLACE\n```\n"
    )
    assert edited_files(reply) == ("src/a.py", "src/b.py")


def test_a_file_without_a_run_line_is_missing_its_header() -> None:
    session = read(b"#### hello  \n\nHi\n")
    assert MISSING_SESSION_HEADER in session.reasons
    assert [e.role for e in entries(session)] == ["user", "assistant"]
