"""Normalize an Aider session: the history's records (``stages.aider.history``) → entries.

* **run** (``# aider chat started at``) → no entry; its time is the ``timestamp`` of every
  entry of the run (local time as aider writes it, no zone: read as UTC).
* **user** (``####``) → a ``user`` entry of what was typed. Input opening with ``/`` or ``!``
  is an aider command (``Commands.is_command``): its first word names it (``!`` is ``run``),
  which is the entry's ``tool`` and family (``stages.aider.tools``). ``/run`` (and ``!``,
  ``/test``, ``/lint``, ``/git``) is a ``bashExecution``: a shell command the user ran. Aider
  does not write the command's output or exit status to the history (``Commands.cmd_run``
  prints them to the terminal and adds them to the model's context only), so its outcome is
  unknown, never guessed from the ``>`` lines that follow.
* **notice** (``>``) → a ``custom`` entry of aider's own messages (status, warnings, errors
  and confirmation answers all share the one blockquote form, so none is typed as an error),
  only under ``index_tool_output``.
* **assistant** → an ``assistant`` entry of the reply. Its edit blocks (``<<<<<<< SEARCH``
  lines, ``editblock_coder.py`` ``HEAD``) name the file they edit on a line just before
  (``find_filename``: up to three lines back through fences): those are ``files_touched``.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Final

from stages.aider.history import ASSISTANT, NOTICE, RUN, USER
from stages.aider.source import AGENT
from stages.aider.tools import RUN as RUN_COMMAND
from stages.aider.tools import TOOLS
from stages.common import clean_text, parse_timestamp_ms
from stages.families import tool_family, tool_identity
from stages.lineage import Lineage
from stages.normalized import EntryMemo, NormalizeResult
from stages.policy import Policy
from stages.source import SourceRecord, SourceSession
from store.records import NormalizedEntry

__all__ = ["command_of", "edited_files", "normalize_aider"]

_COMMAND_OPENERS: Final = "/!"
_SHELL: Final = "shell"
_FENCE: Final = "```"
# editblock_coder.py HEAD: the line that opens an edit block's SEARCH part (a marker, not prose)
_HEAD: Final = re.compile(r"<{5,9} SEARCH>?\s*")


def normalize_aider(
    session: SourceSession, lineage: Lineage, policy: Policy, *, memo: EntryMemo | None = None
) -> NormalizeResult:
    """Entries for the records ``lineage`` selects, in file order (*memo* unused: the file is
    re-read whole). Never raises on odd content."""
    entries: list[NormalizedEntry] = []
    started: int | None = None
    chosen = set(lineage.selected)
    for record in session.records:
        kind = record.kind
        if kind == RUN:
            started = parse_timestamp_ms(record.value.get("started"))
            continue
        if record.position not in chosen:
            continue
        text = record.value.get("text")
        if not isinstance(text, str) or not text:
            continue
        if kind == USER:
            entries.append(_user(record, text, started))
        elif kind == ASSISTANT:
            entry = _entry(record, "assistant", text, started)
            entries.append(replace(entry, files_touched=edited_files(text)))
        elif kind == NOTICE and policy.index_tool_output:
            entries.append(_entry(record, "custom", text, started))
    return NormalizeResult(entries=tuple(entries))


def command_of(text: str) -> str | None:
    """The aider command user input *text* invokes (``!`` is ``run``), or None for a prompt."""
    if not text or text[0] not in _COMMAND_OPENERS:
        return None
    if text[0] == "!":
        return RUN_COMMAND
    word = text[1:].split(maxsplit=1)
    return clean_text(word[0]).replace("_", "-") if word else None


def edited_files(text: str) -> tuple[str, ...]:
    """The files a reply's edit blocks name, in order, each once."""
    lines = text.split("\n")
    found: dict[str, None] = {}
    for i, line in enumerate(lines):
        if _HEAD.fullmatch(line.strip()) is None:
            continue
        for before in reversed(lines[max(0, i - 3) : i]):
            name = _filename(before)
            if name:
                found.setdefault(clean_text(name), None)
                break
            if not before.startswith(_FENCE):
                break
    return tuple(found)


def _filename(line: str) -> str | None:
    """editblock_coder.py ``strip_filename`` (without its fence variants)."""
    name = line.strip()
    if name == "...":
        return None
    if name.startswith(_FENCE):
        rest = name[len(_FENCE) :]
        return rest if rest and ("." in rest or "/" in rest) else None
    name = name.rstrip(":").lstrip("#").strip().strip("`").strip("*")
    return name or None


def _user(record: SourceRecord, text: str, started: int | None) -> NormalizedEntry:
    command = command_of(text)
    if command is None:
        return _entry(record, "user", text, started)
    family = tool_family(AGENT, command)
    role = "bashExecution" if family == _SHELL and command in TOOLS else "user"
    entry = _entry(record, role, text, started)
    ref, provider, action = tool_identity(AGENT, command)
    return replace(entry, tool=command, ref=ref, provider=provider, action=action, family=family)


def _entry(record: SourceRecord, role: str, text: str, started: int | None) -> NormalizedEntry:
    return NormalizedEntry(
        index=0,
        entry_id=record.id,
        parent_id=record.parent_id,
        type="message",
        role=role,
        tool=None,
        text=clean_text(text),
        timestamp=started,
        is_error=False,
        truncated=False,
        line=record.line,
        offset=record.offset,
        agent=AGENT,
        operation_address=f"{record.id}/command" if role == "bashExecution" else None,
    )
