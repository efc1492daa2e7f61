"""The Gemini API's content shapes, which Gemini CLI and Qwen Code both record.

A message's ``content`` is a ``PartListUnion``: a string, one part, or a list of strings and
parts. A part is typed by the one key it carries: ``text`` (with ``thought: true`` it is the
model's reasoning), ``functionCall {id, name, args}``, ``functionResponse {id, name, response}``
(``response.output`` or, for a failed call, ``response.error``), ``inlineData`` / ``fileData``
(media, no text), ``executableCode`` / ``codeExecutionResult``. Anything else is counted as
drift by the reader.

The shell tools of both writers answer the model with a machine-written envelope whose lines
name its fields (``Output: …``, ``Error: …``, ``Exit Code: N``, ``Signal: …``,
``Process Group PGID: N``); Gemini CLI records the exit code nowhere else, so
``envelope_exit_code`` reads it from that envelope (never from the command's own output, which
comes first).
"""

from __future__ import annotations

from typing import Any, Final

__all__ = [
    "KNOWN_PARTS",
    "envelope_exit_code",
    "function_calls",
    "function_responses",
    "part_list",
    "response_body",
    "texts",
    "thoughts",
]

KNOWN_PARTS: Final = frozenset(
    {
        "text",
        "functionCall",
        "functionResponse",
        "inlineData",
        "fileData",
        "executableCode",
        "codeExecutionResult",
        "videoMetadata",
    }
)
# Keys a part may carry beside its one typed key.
_PART_EXTRAS: Final = frozenset({"thought", "thoughtSignature", "partMetadata", "mediaResolution"})

_EXIT: Final = "Exit Code: "
# The envelope's fields after the output, last first, as the shell tools write them.
_TRAILERS: Final = ("Process Group PGID:", "Background PIDs:", "Signal:")
_WRAPPERS: Final = (("<untrusted_context>\n", "\n</untrusted_context>"),)


def part_list(content: object) -> list[dict[str, Any]]:
    """A ``PartListUnion`` as a list of part objects (a bare string is a text part)."""
    items = content if isinstance(content, list) else [content]
    out: list[dict[str, Any]] = []
    for item in items:
        if isinstance(item, str):
            out.append({"text": item})
        elif isinstance(item, dict):
            out.append(item)
    return out


def part_kind(part: dict[str, Any]) -> str | None:
    """The typed key of a part (``text``, ``functionCall``, …), or None when it has none
    this module knows (the reader counts it)."""
    for key in part:
        if key in KNOWN_PARTS:
            return key
    return None


def unknown_parts(parts: list[dict[str, Any]]) -> list[str]:
    """The keys of parts that carry no known typed key (for drift counts)."""
    out: list[str] = []
    for part in parts:
        if part_kind(part) is None:
            keys = [k for k in part if k not in _PART_EXTRAS]
            out.append(keys[0] if keys else "empty")
    return out


def texts(parts: list[dict[str, Any]]) -> list[str]:
    """The answer text of the parts (``text`` parts that are not thoughts)."""
    return [
        p["text"] for p in parts if isinstance(p.get("text"), str) and p.get("thought") is not True
    ]


def thoughts(parts: list[dict[str, Any]]) -> list[str]:
    """The reasoning text of the parts (``text`` parts with ``thought: true``)."""
    return [p["text"] for p in parts if isinstance(p.get("text"), str) and p.get("thought") is True]


def function_calls(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ``functionCall`` objects of the parts, in order."""
    return [p["functionCall"] for p in parts if isinstance(p.get("functionCall"), dict)]


def function_responses(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ``functionResponse`` objects of the parts, in order."""
    return [p["functionResponse"] for p in parts if isinstance(p.get("functionResponse"), dict)]


def response_body(response: object) -> tuple[str, bool]:
    """(text, stated error) of a ``functionResponse.response``: ``output`` as it is, or
    ``error`` (the writer's typed failure) with the flag set; other objects as compact text
    of their string values."""
    if not isinstance(response, dict):
        return "", False
    error = response.get("error")
    if isinstance(error, str):
        return error, True
    output = response.get("output")
    if isinstance(output, str):
        return output, False
    content = response.get("content")
    if isinstance(content, list):
        return "\n".join(texts(part_list(content))), False
    return "", False


def envelope_exit_code(text: str) -> int | None:
    """The ``Exit Code: N`` field of a shell tool's envelope (module docstring), or None."""
    for head, tail in _WRAPPERS:
        if text.startswith(head) and text.endswith(tail):
            text = text[len(head) : -len(tail)]
    lines = text.rstrip("\n").split("\n")
    while lines and lines[-1].startswith(_TRAILERS):
        lines.pop()
    if not lines or not lines[-1].startswith(_EXIT):
        return None
    value = lines[-1][len(_EXIT) :].strip()
    digits = value[1:] if value[:1] == "-" else value
    return int(value) if digits.isascii() and digits.isdigit() else None
