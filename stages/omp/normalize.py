"""Normalize an Oh My Pi session: Pi's normalizer (``stages.pi.normalize``) with omp's dialect.

Every record Pi writes reads as Pi's does (entries are ``agent: "omp"``, tools ``omp.<tool>``
with omp's families, ``stages.omp.tools``). What omp adds:

    developer         no entry: synthetic prompts omp injects (todo and plan reminders, the
                      auto-continue prompt; ``attribution: "agent"``), like a system prompt
    pythonExecution   the user's ``$ code`` in omp's Python kernel, read as Pi reads a
                      ``bashExecution``: "python$ <code>[ [exit N]]\\n<output>" (output only
                      with index_tool_output); tool ``eval`` (the kernel's tool), outcome from
                      ``cancelled`` / ``exitCode``, address ``<id>/python``
    fileMention       "@<path>" per auto-read file, then the files' contents (with
                      index_tool_output); ``files_touched`` their paths
    toolResult        an MCP result's ``details: {serverName, mcpToolName}`` state its
                      identity exactly (``<server>.<tool>``); omp's own MCP names
                      (``mcp__<server>_<tool>``) are split by ``stages.omp.tools.mcp_parts``;
                      a shell result's typed ``details.exitCode`` gives its outcome by the
                      shared rule (``stages.shell_exit``: a search exiting 1 found nothing),
                      read against its call's ``command``, where omp's ``isError`` calls
                      every non-zero exit an error; the text's ``[error]`` mark follows
                      that outcome (a search that matched nothing shows none)
    blocks            ``redactedThinking``, ``fallback`` and ``anthropicServerTool`` add no text

A subagent's transcript (``SourceSession.sidechain``, ``stages.omp.source``) gives sidechain
entries.
"""

from __future__ import annotations

from typing import Any, Final

from stages.common import clean_text, is_blank, js_number_text, js_string
from stages.lineage import Lineage
from stages.normalized import EntryMemo, NormalizeResult
from stages.omp.source import AGENT
from stages.pi.normalize import Dialect, Fields, call_commands, normalize_pi_format
from stages.pi.normalize import appends_locally as pi_appends_locally
from stages.policy import Policy
from stages.shell_exit import needs_command
from stages.source import SourceSession

__all__ = ["OMP", "appends_locally", "normalize_omp"]

_MCP_PREFIX: Final = "mcp__"


def _developer(message: dict[str, Any], entry_id: str | None, policy: Policy) -> Fields | None:
    return None  # injected by omp itself, never conversation


def _python(message: dict[str, Any], entry_id: str | None, policy: Policy) -> Fields:
    code = js_string(message.get("code"))
    output = js_string(message.get("output"))
    exit_code = message.get("exitCode")
    if isinstance(exit_code, bool) or not isinstance(exit_code, int | float):
        exit_code = None
    exit_text = f" [exit {js_number_text(exit_code)}]" if exit_code is not None else ""
    head = f"python$ {code}{exit_text}"
    text = f"{head}\n{output}" if policy.index_tool_output and output else head
    if message.get("cancelled") is True:
        outcome: str | None = "aborted"
    elif exit_code is not None:
        outcome = "succeeded" if exit_code == 0 else "failed"
    else:
        outcome = None
    fields = Fields(role="pythonExecution", text=text, is_error=outcome == "failed")
    fields.identify(AGENT, "eval")
    fields.outcome = outcome
    if entry_id is not None:
        fields.operation_address = f"{entry_id}/python"
    return fields


def _file_mention(message: dict[str, Any], entry_id: str | None, policy: Policy) -> Fields:
    files = message.get("files")
    paths: list[str] = []
    bodies: list[str] = []
    for item in files if isinstance(files, list) else ():
        if not isinstance(item, dict) or not isinstance(item.get("path"), str):
            continue
        paths.append(item["path"])
        content = item.get("content")
        if policy.index_tool_output and isinstance(content, str) and not is_blank(content):
            bodies.append(content)
    text = "\n".join([*(f"@{p}" for p in paths), *bodies])
    fields = Fields(role="fileMention", text=text)
    fields.files = tuple(dict.fromkeys(clean_text(p) for p in paths if p))
    return fields


def _result_identity(tool: str, details: object) -> tuple[str, str, str] | None:
    """An MCP result's ``details`` name its server and the server's own tool name."""
    if not tool.startswith(_MCP_PREFIX) or not isinstance(details, dict):
        return None
    server, action = details.get("serverName"), details.get("mcpToolName")
    if isinstance(server, str) and server and isinstance(action, str) and action:
        return f"{server}.{action}", server, action
    return None


def _result_exit(details: object) -> int | float | None:
    """A bash result's ``details.exitCode`` (omp's ``BashToolDetails``)."""
    code = details.get("exitCode") if isinstance(details, dict) else None
    if isinstance(code, bool) or not isinstance(code, int | float):
        return None
    return code


OMP: Final = Dialect(
    AGENT,
    roles={"developer": _developer, "pythonExecution": _python, "fileMention": _file_mention},
    result_identity=_result_identity,
    result_exit=_result_exit,
)


def appends_locally(appended: SourceSession) -> bool:
    """Pi's rule, and not when an appended shell result's exit code is read against a call
    written before the append (a search's exit 1 needs its command), which the new lines
    alone do not hold."""
    if not pi_appends_locally(appended):
        return False
    commands = call_commands(appended.records)
    for record in appended.records:
        message = record.value.get("message")
        if not isinstance(message, dict) or message.get("role") != "toolResult":
            continue
        code = _result_exit(message.get("details"))
        call_id = message.get("toolCallId")
        if (
            code is not None
            and needs_command(code)
            and not (isinstance(call_id, str) and call_id in commands)
        ):
            return False
    return True


def normalize_omp(
    session: SourceSession, lineage: Lineage, policy: Policy, *, memo: EntryMemo | None = None
) -> NormalizeResult:
    """Normalize the records ``lineage.selected`` names (as ``normalize_pi``; *memo* unused:
    omp appends take the tail path, as Pi's do)."""
    return normalize_pi_format(OMP, session, lineage, policy)
