"""OpenCode, the real writer (``opencode-ai`` from npm), against the scripted model.

One session in ``opencode.db`` (OpenCode 1.2+ keeps no session files): a prompt whose model
reads a file and runs a command that exits 3, a ``grep`` that matches nothing, one MCP call that
succeeds and one whose server answers ``isError``; then ``--continue`` appends a second prompt
to the same session. sessiondex must read the database's rows as one session: the prompts as
typed, each call a typed tool entry with its family, the failed command ``failed`` by its exit
code (``state.metadata.exit``), the ``grep`` a success, MCP tools ``needle_<tool>`` with their
provider and action, and no trace of the system prompt's marker.
"""

from __future__ import annotations

import pytest

from tests.conformance.agents import MCP_SERVER, Home, OpenCodeDriver
from tests.conformance.fake_model import FakeModel, Turn
from tests.conformance.indexed import Indexed, index
from tests.conformance.produce import Produced, produce
from tests.conformance.scenarios import Scenario, Step
from tests.conformance.toolchain import Toolchain

pytestmark = pytest.mark.conformance

OK, ERR = f"{MCP_SERVER}_lookup", f"{MCP_SERVER}_explode"


def _steps(home: Home) -> list[Step]:
    notes = f"{home.work}/notes.txt"
    first = (
        Turn.tool("read", filePath=notes),
        Turn.tool("bash", command="exit 3", description="fails on purpose"),
        Turn.tool("bash", command="grep NOSUCHWORD notes.txt", description="matches nothing"),
        Turn.tool(OK, word="haystack"),
        Turn.tool(ERR, why="on purpose"),
        Turn.say("Read it, the check failed FINALOCQ7"),
    )
    second = (Turn.say("Still here FINALOCQ8"),)
    return [
        Step("Read notes.txt and run the check PROMPTOCQ7", first),
        Step("And once more PROMPTOCQ8", second, resume=True),
    ]


SCENARIO = Scenario("opencode", "shell", _steps, lambda home: [], finals=("FINALOCQ7",))


@pytest.fixture(scope="module")
def produced(
    toolchain: Toolchain, fake_model: FakeModel, tmp_path_factory: pytest.TempPathFactory
) -> Produced:
    driver = OpenCodeDriver(toolchain, fake_model.url, toolchain.opencode)
    return produce(SCENARIO, driver, fake_model, tmp_path_factory.mktemp("opencode"))


@pytest.fixture(scope="module")
def indexed(produced: Produced, tmp_path_factory: pytest.TempPathFactory) -> Indexed:
    return index(produced.home, tmp_path_factory.mktemp("opencode-index"))


def test_one_database_one_session(produced: Produced, indexed: Indexed) -> None:
    assert [p.name for p in produced.files] == ["opencode.db"]
    (session,) = indexed.sessions()
    assert session["file"].startswith(f"{produced.files[0]}#ses_")
    (state,) = indexed.states()
    assert state.cwd == str(produced.home.work) and not state.sidechain
    assert state.title == "Conformance opencode"
    status = indexed.status()
    assert status["indexed"] == 1 and status["incomplete"] == 0 and not status["reasons"], status


def test_entries_are_typed(indexed: Indexed) -> None:
    (session,) = indexed.sessions()
    entries = indexed.entries(session["file"])
    # `opencode run` quotes a message that holds spaces before it sends and stores it
    users = [e["text"] for e in entries if e.get("role") == "user"]
    assert [u.strip('"') for u in users] == ["Read notes.txt and run the check PROMPTOCQ7",
                                             "And once more PROMPTOCQ8"]  # fmt: skip
    results = [(e.get("tool"), e.get("outcome")) for e in entries if e.get("role") == "toolResult"]
    assert results == [
        ("read", "succeeded"),
        ("bash", "failed"),  # exit 3, in state.metadata.exit
        ("bash", "succeeded"),  # grep exit 1: no match
        (OK, "succeeded"),
        (ERR, "failed"),  # the server's isError: OpenCode writes state.status "error"
    ], results
    assert not any("SYSMARKOPENCODEQ7" in e["text"] for e in entries)
    calls = {e["tool"]: e for e in entries if e.get("role") == "assistant" and e.get("tool")}
    assert calls["read"].get("filesTouched", [""])[0].endswith("/notes.txt")
    assert (calls[OK].get("provider"), calls[OK].get("action")) == (MCP_SERVER, "lookup")


def test_found_by_term_and_by_failed_shell(indexed: Indexed) -> None:
    for args in ({}, {"agent": "opencode"}):
        hits = indexed.recall(query="FINALOCQ7", **args)
        assert hits and "FINALOCQ7" in hits[0]["snippet"], hits
    failed = indexed.recall(outcome="failed", kind="shell")
    assert [h["tool"] for h in failed] == ["bash"]
