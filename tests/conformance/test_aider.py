"""Aider, the real writer (``aider-chat`` from PyPI), against the scripted model.

Three runs in one project folder, each appending to its ``.aider.chat.history.md``: a prompt
the model answers with a SEARCH/REPLACE edit block, a ``/run`` of a failing command and the
``!`` shorthand of ``/run``. sessiondex must read the file as one session whose entries are,
in order, each run's notices (``custom``), the prompt (``user``), the reply (``assistant``,
with the file its edit block names) and the commands (``bashExecution``, tool ``run``,
family shell). Aider writes no exit status (``Commands.cmd_run`` prints it to the terminal
only), so the failing ``/run`` has no outcome: ``--outcome failed`` cannot find it, and must
not pretend to.
"""

from __future__ import annotations

import pytest

from tests.conformance.agents import AiderDriver
from tests.conformance.fake_model import FakeModel, Turn
from tests.conformance.indexed import Indexed, index
from tests.conformance.produce import Produced, produce
from tests.conformance.scenarios import Scenario, Step
from tests.conformance.toolchain import Toolchain, pip_install

pytestmark = pytest.mark.conformance

AIDER = ("aider-chat", "0.86.2")
PROMPT = "Set VALUE to 2 in notes.py PROMPTAIDERQ7"
RUN = "/run echo AIDERRUNQ7; exit 3"
BANG = "!echo AIDERBANGQ7"
REPLY = (
    "Changing it now FINALAIDERQ7\n\nnotes.py\n```python\n<<<<<<< SEARCH\nVALUE = 1\n"
    "=======\nVALUE = 2\n>>>>>>> REPLACE\n```\n"
)


def _steps(home: object) -> list[Step]:
    return [Step(PROMPT, (Turn.say(REPLY),)), Step(RUN, ()), Step(BANG, ())]


SCENARIO = Scenario("aider", "history", _steps, lambda home: [], finals=("FINALAIDERQ7",))


@pytest.fixture(scope="module")
def produced(toolchain: Toolchain, fake_model: FakeModel, tmp_path_factory: pytest.TempPathFactory
             ) -> Produced:  # fmt: skip
    aider = pip_install(*AIDER) / "aider"
    driver = AiderDriver(toolchain, fake_model.url, aider)
    return produce(SCENARIO, driver, fake_model, tmp_path_factory.mktemp("aider"))


@pytest.fixture(scope="module")
def indexed(produced: Produced, tmp_path_factory: pytest.TempPathFactory) -> Indexed:
    return index(produced.home, tmp_path_factory.mktemp("aider-index"))


def test_aider_applied_the_edit_and_wrote_one_history(produced: Produced) -> None:
    assert (produced.home.work / "notes.py").read_text() == "VALUE = 2\n"
    assert [p.name for p in produced.files] == [".aider.chat.history.md"]


def test_the_history_is_one_session_of_typed_entries(indexed: Indexed) -> None:
    (session,) = indexed.sessions()
    entries = indexed.entries(session["file"])
    roles = [e.get("role") for e in entries]
    assert roles == ["custom", "user", "assistant", "custom",
                     "custom", "bashExecution", "custom",
                     "custom", "bashExecution", "custom"], roles  # fmt: skip
    assert [e["text"] for e in entries if e.get("role") in ("user", "bashExecution")] == [
        PROMPT,
        RUN,
        BANG,
    ]
    (reply,) = [e for e in entries if e.get("role") == "assistant"]
    assert "FINALAIDERQ7" in reply["text"]
    assert reply.get("filesTouched") == ["notes.py"], reply
    status = indexed.status()
    assert status["indexed"] == 1 and status["incomplete"] == 0 and not status["reasons"], status


def test_aider_commands_are_shell_calls_without_an_outcome(indexed: Indexed) -> None:
    hits = indexed.recall(kind="shell")
    assert sorted(h.get("tool") for h in hits) == ["run", "run"], hits
    assert all(h.get("outcome") is None for h in hits), hits
    assert indexed.recall(kind="shell", outcome="failed") == []
    found = indexed.recall(query="AIDERRUNQ7", agent="aider")
    assert found and found[0].get("role") == "bashExecution", found
