"""What a person reads (`--text`): no terminal escapes, marked terms, the right passage,
each line once, exit codes shared with `pipeline` (issue 20; issue 14 point 5)."""

from __future__ import annotations

import subprocess
import sys

import orjson
import pytest

from query.present import snippet
from query.render import mark_terms, printable
from query.search import plan_query
from store.exits import EXIT_ANSWERED_ERROR, EXIT_CLOSED_PIPE, MEANINGS
from tests.helpers import bash, header, user
from tests.unit.query.kit import CWD, T0, Kit
from tests.unit.query.test_cli import run

ESCAPES = "\x1b[?25l\x1b[31mred\x1b[0m \x1b]0;title\x07done\x9b1m\r\n"


def test_printable_strips_what_a_terminal_would_act_on() -> None:
    assert printable(ESCAPES) == "red done\n"
    assert printable("a\rb") == "a\nb"  # a progress line overwrite becomes a new line
    assert printable("tab\tand\nnewline") == "tab\tand\nnewline"


def test_runs_of_blank_lines_become_one() -> None:
    assert printable("head" + "\n" * 50 + "tail") == "head\n\ntail"
    assert printable("a\n \n\t\n\nb") == "a\n\nb"


def test_mark_terms_marks_whole_tokens_only() -> None:
    marks = ("<", ">")
    assert mark_terms("The latest Test passed", ["test"], marks) == "The latest <Test> passed"
    assert mark_terms("nothing here", ["test"], marks) == "nothing here"
    assert mark_terms("技術スタック", ["技術"], marks) == "<技術>スタック"


def test_the_snippet_shows_the_passage_that_matched() -> None:
    # Given a long tool output that names one term in passing early, and both terms together
    # far later
    text = "flaky " + "filler " * 200 + "the flaky retry test " + "filler " * 200
    plan = plan_query("flaky retry", "literal", "any")
    shown, cut = snippet(text, plan, 120)
    assert cut
    assert "flaky retry" in shown


def test_the_snippet_skips_a_term_inside_another_word() -> None:
    text = "latest " * 100 + "the test we wanted " + "word " * 100
    shown, _ = snippet(text, plan_query("test", "literal", "any"), 90)
    assert "the test we wanted" in shown


@pytest.fixture
def noisy(kit: Kit) -> Kit:
    kit.session(
        "s",
        [
            header("s", CWD),
            user("u", None, "run the flaky needle test", T0),
            bash("b", "u", "pytest", ESCAPES + "needle" + "\n" * 50 + "end", T0 + 60_000),
        ],
    )
    kit.build()
    return kit


def test_recall_text_has_no_escapes_and_marks_the_term(
    noisy: Kit, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(noisy, capsys, "recall", "needle", "--text")
    assert code == 0
    assert "\x1b" not in out and "\x9b" not in out
    assert "«needle»" in out  # not a terminal: guillemets, not bold
    assert "\n\n\n" not in out


def test_json_and_expand_keep_the_exact_text(
    noisy: Kit, capsys: pytest.CaptureFixture[str]
) -> None:
    _, out, _ = run(noisy, capsys, "expand", "s", "--indices", "1", "--json")
    assert ESCAPES in orjson.loads(out)["entries"][0]["text"]


def test_expand_a_file_as_text_prints_its_entries(
    noisy: Kit, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(noisy, capsys, "expand", "s", "--text")
    assert code == 0
    assert "#0 user" in out and "run the flaky needle test" in out and "#1 bash" in out


def test_catalog_text_prints_each_agent_line_once(
    noisy: Kit, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(noisy, capsys, "catalog", "--scope", "global", "--text")
    assert code == 0
    lines = out.splitlines()
    assert sum(line.startswith("pi ") for line in lines) == 1
    assert not any(line.startswith("  pi ") for line in lines)


def test_an_answered_error_exits_with_the_shared_code(
    noisy: Kit, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, _ = run(noisy, capsys, "expand", "nobody", "--indices", "0", "--json")
    assert code == EXIT_ANSWERED_ERROR == 6
    assert MEANINGS[code].startswith("answered with an error")


def test_version_is_the_installed_distribution(capsys: pytest.CaptureFixture[str]) -> None:
    from importlib.metadata import version

    from query.cli import main

    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.strip() == f"sessiondex {version('sessiondex')}"


@pytest.mark.parametrize("command", ["query", "pipeline"])
def test_a_closed_pipe_ends_quietly(command: str) -> None:
    # `… | head -1`: the reader takes one line and goes; no BrokenPipeError traceback
    script = f"import sys\nfrom {command}.cli import main\nsys.exit(main(['completion', 'bash']))\n"
    proc = subprocess.Popen(
        [sys.executable, "-c", script],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # before the child's first write (it is still importing)
    err = proc.stderr.read().decode()
    proc.stderr.close()
    assert proc.wait(timeout=60) == EXIT_CLOSED_PIPE
    assert "Traceback" not in err and "BrokenPipe" not in err


def test_the_snippet_window_lands_on_the_raw_text_when_nfkc_changes_lengths() -> None:
    # "ﬁ" (one ligature character) is "fi" after NFKC: offsets in the normalized text drift
    text = "ﬁ" * 300 + " the needle here " + "word " * 100
    shown, _ = snippet(text, plan_query("needle", "literal", "any"), 90)
    assert "needle" in shown


def test_sessions_text_shows_the_first_prompt_and_counts_without_escapes(
    kit: Kit, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a session whose first prompt carries a pasted terminal escape
    kit.session(
        "s",
        [
            header("s", CWD),
            user("u", None, "why does \x1b[?25lthe cursor vanish", T0),
            bash("b", "u", "pytest", "boom", T0 + 60_000),
        ],
    )
    kit.build()
    # When a person lists sessions
    code, out, _ = run(kit, capsys, "sessions", "--text")
    # Then the row says what the session was and what happened in it, and moves no cursor
    assert code == 0
    assert "> why does " in out and "the cursor vanish" in out and "\x1b" not in out
    assert "(1 prompt, 1 tool result, 0 failed)" in out


def test_sessions_text_shows_the_recorded_title(
    kit: Kit, capsys: pytest.CaptureFixture[str]
) -> None:
    named = {"type": "session_info", "id": "i", "parentId": "u", "name": "cursor \x1b[2Jbug"}
    kit.session("s", [header("s", CWD), user("u", None, "why does it vanish", T0), named])
    kit.build()
    code, out, _ = run(kit, capsys, "sessions", "--text")
    assert code == 0
    assert "    # cursor " in out and "bug" in out and "\x1b" not in out
    assert out.index("# cursor") < out.index("> why does it vanish")
