"""Agent-neutral tool calls and their outputs; each agent module maps them to its own shapes."""

from __future__ import annotations

from dataclasses import dataclass

from devtools.corpus.project import Project
from devtools.corpus.words import Text

__all__ = ["KINDS", "WEIGHTS", "ToolCall", "ToolOutput", "plan_call", "run_call"]

KINDS = ("read", "bash", "edit", "grep", "find", "ls", "write")
WEIGHTS = (30, 25, 15, 10, 5, 5, 5)
# What one line of generated code / log costs, to size big outputs.
_CODE_LINE_BYTES = 42
_LOG_LINE_BYTES = 58
_SEARCHES = ("rg", "grep")


@dataclass(frozen=True, slots=True)
class ToolCall:
    """What the model asked for: ``path`` is absolute; ``command`` is set for ``bash``."""

    kind: str
    path: str
    command: str = ""
    pattern: str = ""
    old: str = ""
    new: str = ""
    content: str = ""


@dataclass(frozen=True, slots=True)
class ToolOutput:
    """The output text; ``exit_code`` only for commands (``bash``, and reads run as commands)."""

    text: str
    is_error: bool
    exit_code: int = 0


def plan_call(kind: str, text: Text, project: Project) -> ToolCall:
    rng = text.rng
    if kind == "bash":
        return ToolCall(kind, project.cwd, command=project.command(text))
    if kind in ("grep", "find", "ls"):
        folder = f"{project.cwd}/{text.pick(project.dirs)}"
        pattern = (
            text.pick(project.idents) if kind == "grep" else f"*{text.pick(project.files)[-3:]}"
        )
        return ToolCall(kind, folder, pattern=pattern)
    path = project.path(text)
    if kind == "edit":
        return ToolCall(
            kind, path, old=text.code(rng.randint(1, 6)), new=text.code(rng.randint(1, 8))
        )
    if kind == "write":
        return ToolCall(kind, path, content=text.code(rng.randint(5, 80)))
    return ToolCall(kind, path)


def _lines(text: Text, median: int) -> int:
    return max(1, int(text.rng.lognormvariate(0, 0.9) * median))


def run_call(call: ToolCall, text: Text, *, fail: bool, big: int, now_ms: int) -> ToolOutput:
    """The tool's output; ``fail`` makes it an error, ``big`` (bytes) makes it huge."""
    rng = text.rng
    kind, path = call.kind, call.path
    if kind == "bash":
        lines = big // _LOG_LINE_BYTES if big else _lines(text, 12)
        body = text.log(lines, now_ms)
        if fail:
            code = rng.choice((1, 1, 1, 2, 127))
            if code == 1 and call.command.split(" ", 1)[0] in _SEARCHES:
                code = 2  # a search's exit 1 is "no match", not a failure (stages.shell_exit)
            return ToolOutput(f"{body}\n\nCommand exited with code {code}", True, code)
        return ToolOutput(body if rng.random() < 0.95 else "(no output)", False)
    if kind == "read":
        if fail:
            return ToolOutput(f"ENOENT: no such file or directory, access '{path}'", True, 1)
        lines = big // _CODE_LINE_BYTES if big else _lines(text, 60)
        return ToolOutput(text.code(lines), False)
    if kind == "edit":
        if fail:
            return ToolOutput(
                f"Could not find the exact text in {path}. The old text must match exactly "
                "including all whitespace and newlines.",
                True,
                1,
            )
        return ToolOutput(f"Successfully replaced text in {path}.", False)
    if kind == "write":
        if fail:
            return ToolOutput(f"EACCES: permission denied, open '{path}'", True, 1)
        return ToolOutput(f"Successfully wrote {len(call.content)} bytes to {path}", False)
    if fail:
        return ToolOutput(f"Path not found: {path}", True, 2)
    if kind == "grep":
        hits = [
            f"{path}/{text.identifier().lower()}.ts:{rng.randint(1, 900)}: {text.code_line()}"
            for _ in range(_lines(text, 8))
        ]
        return ToolOutput("\n".join(hits) if rng.random() < 0.9 else "No matches found", False)
    if kind == "find":
        names = [
            f"{path}/{text.identifier().lower()}{call.pattern[1:]}" for _ in range(_lines(text, 10))
        ]
        return ToolOutput("\n".join(names), False)
    names = [
        text.identifier().lower() + rng.choice(("/", ".ts", ".py", ".md", ""))
        for _ in range(_lines(text, 12))
    ]
    return ToolOutput("\n".join(sorted(names)), False)
