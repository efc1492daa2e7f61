"""The one exit-code rule: a search program's exit 1 is "no match", every other non-zero exit
is a failure, read from the command's syntax only."""

from __future__ import annotations

import pytest

from stages.shell_exit import exit_outcome, no_match


@pytest.mark.parametrize(
    "command",
    [
        "grep -rn needle src",
        "rg needle",
        "/usr/bin/grep -q x f",
        "cat f | grep x",
        "LC_ALL=C grep x f 2>/dev/null",
        "git grep -n x",
        ["rg", "--json", "x"],
        ["bash", "-lc", "rg x | grep y"],
        "egrep 'a|b' f",
    ],
)
def test_a_search_that_matched_nothing_succeeded(command: object) -> None:
    assert no_match(command, 1)
    assert exit_outcome(command, 1) == "succeeded"
    assert exit_outcome(command, 2) == "failed"  # the search's own error


@pytest.mark.parametrize(
    "command",
    [
        "make test",
        "grep x f | wc -l",  # the status is wc's
        "grep x f && echo found",  # the status could be either command's
        "grep x f; ls",
        "(grep x f)",
        "grep x f\nls",
        "git log --grep x",
        ["bash", "-lc", "pytest"],
        "grep 'unclosed",
        None,
        ["rg", 3],
    ],
)
def test_anything_else_that_exited_1_failed(command: object) -> None:
    assert not no_match(command, 1)
    assert exit_outcome(command, 1) == "failed"


def test_exit_zero_succeeds_and_doubles_count_as_their_value() -> None:
    assert exit_outcome("anything", 0) == "succeeded"
    assert exit_outcome("grep x f", 1.0) == "succeeded"
    assert exit_outcome("grep x f", float("inf")) == "failed"
