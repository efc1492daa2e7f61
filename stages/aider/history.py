"""Aider's chat history file (``.aider.chat.history.md``) → records, by the structure its
writer gives each line (aider 0.86, ``aider/io.py`` ``InputOutput``).

Aider appends to one markdown file per project (``--chat-history-file``, default in the git
root) and writes exactly four kinds of line, each by one method::

    # aider chat started at 2026-12-02 09:47:39     __init__: a run starts (local time)
    #### <input line>                               user_input: every line of what the user
                                                    typed, "####"-prefixed, "  " line breaks
    > <message>                                     tool_output / tool_error / tool_warning /
                                                    confirm_ask answers: blockquoted ("> ", or
                                                    ">" alone for an empty one)
    <anything else>                                 ai_output: the model's reply, verbatim

Consecutive lines of one kind make one record ``{"type": run|user|notice|assistant, "text"}``
(a run's ``started`` is the time as written). A reply is markdown and may quote, so inside a
reply's code fence (a line opening with three backticks) a ``>`` line is the reply's (the
``>>>>>>> REPLACE`` marker of an edit block never is a blockquote: it has no space). The run
and user lines always start a new record: aider writes them, the model does not.
Nothing here reads what a line says beyond these prefixes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

from stages.source import ParseResult, RawRecord

__all__ = ["ASSISTANT", "NOTICE", "RUN", "RUN_PREFIX", "USER", "parse_history"]

RUN: Final = "run"
USER: Final = "user"
NOTICE: Final = "notice"
ASSISTANT: Final = "assistant"
RUN_PREFIX: Final = "# aider chat started at "
_USER: Final = "####"
_QUOTE: Final = ">"
_FENCE: Final = "```"
_BLANK_INPUT: Final = "<blank>"  # user_input's stand-in for an empty input


@dataclass
class _Block:
    kind: str
    line: int
    offset: int
    lines: list[str] = field(default_factory=list)
    fenced: bool = False

    def value(self) -> dict[str, Any]:
        if self.kind == RUN:
            return {"type": RUN, "started": self.lines[0][len(RUN_PREFIX) :].strip()}
        text = "\n".join(self.lines).strip("\n")
        return {"type": self.kind, "text": text}


def parse_history(data: bytes) -> ParseResult:
    """The records of a chat history file; never raises (bytes that are not UTF-8 are
    replaced, as aider itself writes with ``errors="ignore"``)."""
    text = data.decode("utf-8", "replace")
    blocks: list[_Block] = []
    current: _Block | None = None
    offset = 0
    number = 0
    for number, raw in enumerate(text.splitlines(keepends=True), start=1):
        at = offset
        offset += len(raw.encode("utf-8", "surrogatepass"))
        line = raw.rstrip("\r\n")
        kind = _kind(line, current)
        if kind is None:  # a blank line: part of a reply, the end of anything else
            if current is not None and current.kind == ASSISTANT:
                current.lines.append("")
            elif current is not None:
                current = None
            continue
        if current is None or kind != current.kind or kind == RUN:
            current = _Block(kind, number, at)
            blocks.append(current)
        current.lines.append(_content(kind, line))
        if kind == ASSISTANT and line.startswith(_FENCE):
            current.fenced = not current.fenced
    records = tuple(RawRecord(b.line, b.offset, b.value()) for b in blocks if _kept(b))
    return ParseResult(records=records, consumed=len(data), next_line=number + 1)


def _kind(line: str, current: _Block | None) -> str | None:
    if line.startswith(RUN_PREFIX):
        return RUN
    if line == _USER or line.startswith(_USER + " "):
        return USER
    if current is not None and current.kind == ASSISTANT and current.fenced:
        return ASSISTANT
    if line == _QUOTE or line.startswith(_QUOTE + " "):
        return NOTICE
    if not line.strip():
        return None
    return ASSISTANT


def _content(kind: str, line: str) -> str:
    if kind == USER:
        return line[len(_USER) + 1 :].rstrip()
    if kind == NOTICE:
        return line[len(_QUOTE) + 1 :].rstrip()
    return line


def _kept(block: _Block) -> bool:
    if block.kind == RUN:
        return True
    text = "\n".join(block.lines).strip()
    return bool(text) and not (block.kind == USER and text == _BLANK_INPUT)
