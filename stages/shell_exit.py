"""What a shell command's exit code says about the call, the one rule every agent's normalizer
applies where a writer records an exit code next to the command it ran.

A non-zero exit is a failure, except where the program defines it otherwise: ``grep`` and its
kin (``rg``, ``egrep``, ``fgrep``, ``zgrep``, ``git grep``, ``ag``, ``ack``) exit 1 for "no line
matched", which is an answer, not a failure (2 and above are their errors). Qwen Code and Claude
Code already decide so before they write a status; Pi, Oh My Pi, Codex and Gemini CLI record the
bare code, so ``--outcome failed`` would otherwise list every search that found nothing.

The program is read from the command's syntax, never from output or prose: the command is split
as the shell splits words (``shlex``); an exit code belongs to the last command of a pipeline,
so only a single pipeline is read (no ``;``, ``&&``, ``||``, ``&``, subshells or newlines, whose
status could be another command's), and leading ``NAME=value`` assignments are skipped. A
command given as an argument vector (Codex ``["bash", "-lc", "…"]``) is read the same way.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import Final

__all__ = ["NO_MATCH_PROGRAMS", "exit_outcome", "needs_command", "no_match"]

NO_MATCH_PROGRAMS: Final = frozenset({"grep", "egrep", "fgrep", "zgrep", "rg", "ag", "ack"})
_NO_MATCH_EXIT: Final = 1
_SHELLS: Final = frozenset({"sh", "bash", "zsh", "dash", "ksh"})
_SHELL_FLAGS: Final = frozenset({"-c", "-lc", "-ic", "-ilc", "-lic"})
# shlex (punctuation_chars) tokens that make the final status another command's.
_SEQUENCING: Final = frozenset({";", "&", "&&", "||", "(", ")", ";;", "|&"})


def exit_outcome(command: object, exit_code: float) -> str:
    """``succeeded`` or ``failed`` for a shell call that exited with *exit_code* (a JSON
    number: Pi writes them as doubles)."""
    if exit_code == 0 or no_match(command, exit_code):
        return "succeeded"
    return "failed"


def needs_command(exit_code: float) -> bool:
    """Whether *exit_code*'s outcome depends on the command that exited with it."""
    return exit_code == _NO_MATCH_EXIT


def no_match(command: object, exit_code: float) -> bool:
    """True when *exit_code* is a search program's "nothing matched" (module docstring)."""
    if exit_code != _NO_MATCH_EXIT:
        return False
    argv = _last_command(command)
    if not argv:
        return False
    program = argv[0].rsplit("/", 1)[-1]
    if program == "git":
        return len(argv) > 1 and argv[1] == "grep"
    return program in NO_MATCH_PROGRAMS


def _last_command(command: object) -> list[str]:
    """The words of the command whose status the call's exit code is, or [] when unsure."""
    if isinstance(command, list | tuple):
        words = [w for w in command if isinstance(w, str)]
        if len(words) != len(command) or not words:
            return []
        if words[0].rsplit("/", 1)[-1] in _SHELLS and len(words) == 3 and words[1] in _SHELL_FLAGS:
            return _last_command(words[2])
        return _simple(words)
    if not isinstance(command, str) or "\n" in command.strip():
        return []
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError:  # an unclosed quote: not a command the shell ran as written
        return []
    if any(t in _SEQUENCING for t in tokens):
        return []
    stages: list[list[str]] = [[]]
    for token in tokens:
        if token == "|":
            stages.append([])
        else:
            stages[-1].append(token)
    return _simple(stages[-1])


def _simple(words: Sequence[str]) -> list[str]:
    """*words* without leading ``NAME=value`` assignments."""
    at = 0
    while at < len(words) and _assignment(words[at]):
        at += 1
    return list(words[at:])


def _assignment(word: str) -> bool:
    name, equals, _ = word.partition("=")
    return bool(equals) and name.isidentifier()
