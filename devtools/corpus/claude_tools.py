"""Claude Code's tool calls and results: tool names, ``input`` shapes, ``toolUseResult``."""

from __future__ import annotations

from typing import Any

from devtools.corpus.draft import FieldPath
from devtools.corpus.tools import ToolCall
from devtools.corpus.words import Text

__all__ = ["claude_args", "claude_result"]

_EDITED = "Here's the result of running `cat -n` on a snippet of the edited file:"


def claude_args(call: ToolCall, text: Text) -> tuple[str, dict[str, Any]]:
    kind = call.kind
    if kind == "read":
        return "Read", {"file_path": call.path}
    if kind == "edit":
        return "Edit", {
            "file_path": call.path,
            "old_string": call.old,
            "new_string": call.new,
            "replace_all": False,
        }
    if kind == "write":
        return "Write", {"file_path": call.path, "content": call.content}
    if kind == "grep":
        return "Grep", {
            "pattern": call.pattern,
            "path": call.path,
            "output_mode": "content",
            "-n": True,
        }
    if kind == "find":
        return "Glob", {"pattern": f"**/{call.pattern}", "path": call.path}
    if kind == "ls":
        return "Bash", {"command": f"ls -la {call.path}", "description": "List directory contents"}
    return "Bash", {"command": call.command, "description": text.short(2, 6).capitalize()}


def _numbered(body: str, start: int = 1) -> str:
    return "\n".join(f"{n:>6}→{line}" for n, line in enumerate(body.split("\n"), start))


def claude_result(
    call: ToolCall, out: str, is_error: bool, exit_code: int, text: Text
) -> tuple[Any, bool, Any, FieldPath | None]:
    """(tool_result content, is_error, toolUseResult, path of a verbatim copy of the content)."""
    kind, path = call.kind, call.path
    if is_error:
        if kind in ("bash", "ls"):
            return (
                f"Exit code {exit_code}\n{out}",
                True,
                f"Error: Exit code {exit_code}\n{out}",
                None,
            )
        message = {
            "read": "File does not exist.",
            "edit": f"String to replace not found in file.\nString: {call.old}",
            "write": "File has not been read yet. Read it first before writing to it.",
        }.get(kind, f"Path does not exist: {path}")
        return f"<tool_use_error>{message}</tool_use_error>", True, f"Error: {message}", None
    if kind in ("bash", "ls"):
        extra = {"stdout": out, "stderr": "", "interrupted": False, "isImage": False}
        return out, False, extra, ("toolUseResult", "stdout")
    if kind == "read":
        lines = out.count("\n") + 1
        extra = {
            "type": "text",
            "file": {
                "filePath": path,
                "content": out,
                "numLines": lines,
                "startLine": 1,
                "totalLines": lines,
            },
        }
        return _numbered(out), False, extra, None
    if kind == "edit":
        snippet = _numbered(call.new, text.rng.randint(1, 400))
        body = f"The file {path} has been updated. {_EDITED}\n{snippet}"
        patch = [
            {
                "oldStart": 1,
                "oldLines": call.old.count("\n") + 1,
                "newStart": 1,
                "newLines": call.new.count("\n") + 1,
                "lines": [f"-{x}" for x in call.old.split("\n")]
                + [f"+{x}" for x in call.new.split("\n")],
            }
        ]
        extra = {
            "filePath": path,
            "oldString": call.old,
            "newString": call.new,
            "originalFile": None,
            "structuredPatch": patch,
            "userModified": False,
            "replaceAll": False,
        }
        return body, False, extra, None
    if kind == "write":
        return (
            f"File created successfully at: {path}",
            False,
            {"type": "create", "filePath": path, "content": call.content, "structuredPatch": []},
            None,
        )
    if kind == "grep":
        n = out.count("\n") + 1
        extra = {"mode": "content", "numFiles": n, "filenames": [], "content": out, "numLines": n}
        return out, False, extra, ("toolUseResult", "content")
    names = out.split("\n")
    extra = {
        "filenames": names,
        "durationMs": text.rng.randint(2, 400),
        "numFiles": len(names),
        "truncated": False,
    }
    return out, False, extra, None
