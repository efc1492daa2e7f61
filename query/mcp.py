"""`query mcp`: the index as Model Context Protocol tools, over stdio.

::

    MCP client (Claude Code, Codex, …) ──stdio──► this process ──► Backend
                                                               ├─► `query serve` socket
                                                               └─► in-process, read-only

Four tools, built on the official ``mcp`` SDK's low-level server so each input schema is
exactly the seed's arguments (``additionalProperties: false``)::

    memory_recall    memory.recall     ranked, bounded search; browse by exact filters
    memory_expand    memory.expand     lossless reading of exact entries, in chunks
    memory_sessions  memory.sessions   the sessions a scope selects
    memory_catalog   memory.catalog    capability heads seen in history

A result is the seed's object, as ``structuredContent`` and as its JSON text. A call token
``{ref, args}`` from a result (a hit's ``follow``, a page's ``next``) is followed by calling the
tool it names (``memory.expand`` → ``memory_expand``) with ``args`` as the arguments; the whole
token is accepted too. A request the tool cannot take (an unknown argument, a value out of
range) comes back with ``isError`` and ``{"error": {"code": "invalid_argument", …}}``; an
answered failure (``stale_pointer``, an ambiguous session, …) is a normal result whose
``error`` names it, exactly as the CLI prints it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

import orjson

from query.args import (
    EXPAND_MAX_CHARS,
    EXPAND_MAX_CONTEXT,
    EXPAND_MAX_ENTRIES,
    OUTCOMES,
    PAGE_SIZE_MAX,
    QUERY_MATCHES,
    QUERY_MODES,
    RESPONSE_MAX_CHARS,
    ROLES,
    SESSIONS_MAX,
)
from query.errors import InvalidArgument, QueryError
from query.u16 import json_length
from store.errors import IndexOutdated, SnapshotMissing, StoreError
from store.exits import EXIT_OK, EXIT_USAGE
from store.records import AGENTS, BRANCH_MODES, TOOL_FAMILIES

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

    from query.transport import Backend, ServerMode
    from store.config import Config

__all__ = ["TOOLS", "Tool", "build_server", "call_tool", "run_mcp"]

SERVER_NAME: Final = "sessiondex"

# ----------------------------------------------------------------------------- schemas

_CWD = {
    "type": "string",
    "description": "Absolute directory that `session` and `project` scopes (and relative "
    "session paths) resolve from. Default: the working directory of this MCP server.",
}
_BRANCHES = {
    "type": "string",
    "enum": list(BRANCH_MODES),
    "description": "`active` (default): each session's active branch and its subagents' "
    "work. `all`: also the branches it abandoned.",
}
_AGENT = {
    "type": "string",
    "enum": list(AGENTS),
    "description": "Only sessions written by this agent.",
}
_SCOPE = {
    "type": "string",
    "description": "`session` (default): the newest session of the working directory; "
    "`project`: every session of the working directory; `global`: every indexed session; "
    "`session:<id-or-path>`: exactly one session.",
}
_HASH = {
    "type": "string",
    "description": "Integrity binding issued inside a follow/next token; copy it unchanged.",
}
_RANGE = {
    "type": "object",
    "properties": {"first": {"type": "integer"}, "last": {"type": "integer"}},
    "required": ["first", "last"],
    "additionalProperties": False,
    "description": "Inclusive range of entry indices.",
}
_EPOCH = {"type": "integer", "description": "Epoch milliseconds."}
# As the CLI's --since / --until (query.timespec): epoch ms, an ISO date or time, or an age.
_WHEN = {
    "type": ["integer", "string"],
    "description": "Epoch milliseconds, an ISO date or date-time (`2026-01-15`, "
    "`2026-01-15T09:30:00Z`), or an age before now (`90s`, `30m`, `12h`, `7d`, `2w`).",
}

RECALL_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "query": {
            "type": "string",
            "maxLength": 4096,
            "description": "What to find. Literal mode matches whole words (any term by "
            "default). Omit it to browse by the structural filters alone.",
        },
        "queryMode": {
            "type": "string",
            "enum": list(QUERY_MODES),
            "description": "`literal` (default) word tokens; `phrase` contiguous text; "
            "`regex` an explicit regular expression (bounded, may time out).",
        },
        "queryMatch": {
            "type": "string",
            "enum": list(QUERY_MATCHES),
            "description": "Literal mode only: `any` (default) term, or `all` terms in one entry.",
        },
        "scope": _SCOPE,
        "branches": _BRANCHES,
        "role": {"type": "string", "enum": list(ROLES), "description": "Exact entry role."},
        "sidechain": {
            "type": ["boolean", "string"],
            "enum": [True, False, "any"],
            "description": "`true` only subagents' entries (Claude sidechains, subagent files, "
            "Codex subagent rollouts), `false` only the session's own, `any` (default) both.",
        },
        "tool": {"type": "string", "description": "Exact tool name, e.g. `bash` or `Bash`."},
        "ref": {
            "type": "string",
            "description": "Exact capability ref, e.g. `pi.bash` (see memory_catalog).",
        },
        "provider": {"type": "string", "description": "Exact provider, e.g. `pi`."},
        "action": {"type": "string", "description": "Exact action, e.g. `grep`."},
        "outcome": {
            "type": "string",
            "enum": list(OUTCOMES),
            "description": "Exact execution outcome of tool results and operations.",
        },
        "kind": {
            "type": "string",
            "enum": list(TOOL_FAMILIES),
            "description": "Tool family on every agent: `shell` finds Pi bash, Claude Bash and "
            "Codex exec_command alike; `mcp` any MCP tool (see memory_catalog).",
        },
        "agent": _AGENT,
        "since": {
            **_WHEN,
            "description": "Entries at or after this time. " + str(_WHEN["description"]),
        },
        "until": {
            **_WHEN,
            "description": "Entries at or before this time (a date means its end). "
            + str(_WHEN["description"]),
        },
        "pageSize": {
            "type": "integer",
            "minimum": 1,
            "maximum": PAGE_SIZE_MAX,
            "description": "Hits per page (default 10); the response stays under 30,000 chars.",
        },
        "snippetChars": {
            "type": "integer",
            "minimum": 80,
            "maximum": 2000,
            "description": "Snippet length per hit (default 480).",
        },
        "offset": {"type": "integer", "minimum": 0, "description": "Set by `next` tokens."},
        "entryRange": {**_RANGE, "description": "With scope session:<…> only: entry indices."},
        "expectedSourceHash": _HASH,
        "expectedLineageFingerprint": _HASH,
        "cwd": _CWD,
    },
    "additionalProperties": False,
}

EXPAND_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "session": {
            "type": "string",
            "description": "Session file path or session id (from a hit's follow.args).",
        },
        "indices": {
            "type": "array",
            "items": {"type": "integer", "minimum": 0},
            "description": "Entry indices to read.",
        },
        "entryIds": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Stable entry ids to read.",
        },
        "operationAddresses": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Operation addresses (e.g. `entry-id/3`) to read.",
        },
        "entryRange": _RANGE,
        "before": {
            "type": "integer",
            "minimum": 0,
            "maximum": EXPAND_MAX_CONTEXT,
            "description": "Entries before the one selected anchor.",
        },
        "after": {
            "type": "integer",
            "minimum": 0,
            "maximum": EXPAND_MAX_CONTEXT,
            "description": "Entries after the one selected anchor.",
        },
        "maxChars": {
            "type": "integer",
            "minimum": 256,
            "maximum": EXPAND_MAX_CHARS,
            "description": "Text budget of this call (default 20,000); longer text continues "
            "through `next`.",
        },
        "maxEntries": {
            "type": "integer",
            "minimum": 1,
            "maximum": EXPAND_MAX_ENTRIES,
            "description": "Entries per call (default 10).",
        },
        "entryOffset": {"type": "integer", "minimum": 0, "description": "Set by `next` tokens."},
        "textOffset": {"type": "integer", "minimum": 0, "description": "Set by `next` tokens."},
        "branches": _BRANCHES,
        "expectedSourceHash": _HASH,
        "expectedLineageFingerprint": _HASH,
        "cwd": _CWD,
    },
    "required": ["session"],
    "additionalProperties": False,
}

SESSIONS_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "scope": _SCOPE,
        "limit": {
            "type": "integer",
            "minimum": 1,
            "maximum": SESSIONS_MAX,
            "description": "At most this many rows.",
        },
        "agent": _AGENT,
        "branches": _BRANCHES,
        "cwd": _CWD,
    },
    "additionalProperties": False,
}

CATALOG_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "scope": {
            "type": "string",
            "description": "`project` (default): every session of the working directory; "
            "`session`: its newest session; `global`: every indexed session; "
            "`session:<id-or-path>`: exactly one session.",
        },
        "agent": _AGENT,
        "branches": _BRANCHES,
        "cwd": _CWD,
    },
    "additionalProperties": False,
}

# Output schemas: the seed's result objects, loosely (extra keys allowed: the objects grow
# by fields, and a client must not break on one). An answered failure carries ``error``.
_OBJECT: Final[dict[str, Any]] = {"type": "object"}
_TOKEN: Final[dict[str, Any]] = {
    "type": ["object", "null"],
    "properties": {"ref": {"type": "string"}, "args": {"type": "object"}},
    "description": "A call token: call the tool `ref` names with `args` unchanged.",
}
_ERROR: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {"code": {"type": "string"}, "message": {"type": "string"}},
    "required": ["code", "message"],
}
_COVERAGE: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "complete": {"type": "boolean"},
        "indexedSessions": {"type": "integer"},
        "eligibleSessions": {"type": "integer"},
        "staleSessions": {"type": "integer"},
        "incompleteSessions": {"type": "integer"},
        "reasons": {"type": "array", "items": {"type": "string"}},
        "notes": {"type": "array", "items": {"type": "string"}},
        "hints": {"type": "array", "items": _OBJECT},
    },
    "required": ["complete", "reasons"],
}


def _output(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {**properties, "error": _ERROR},
        "anyOf": [{"required": required}, {"required": ["error"]}],
    }


RECALL_OUTPUT: Final = _output(
    {
        "total": {"type": "integer"},
        "hits": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "kind": {"enum": ["entry", "session"]},
                    "sessionId": {"type": "string"},
                    "score": {"type": "number"},
                    "snippet": {"type": "string"},
                    "follow": _TOKEN,
                    "archived": {
                        "type": "boolean",
                        "description": "the session's file is gone: read from the archive",
                    },
                },
                "required": ["kind", "sessionId", "score", "follow"],
            },
        },
        "next": _TOKEN,
        "coverage": _COVERAGE,
    },
    ["total", "hits", "next", "coverage"],
)
EXPAND_OUTPUT: Final = _output(
    {
        "session": {"type": "string"},
        "entryCount": {"type": "integer"},
        "entries": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "index": {"type": "integer"},
                    "text": {"type": "string"},
                    "textRange": _OBJECT,
                },
                "required": ["index", "text", "textRange"],
            },
        },
        "next": _TOKEN,
    },
    ["session", "entries"],
)
SESSIONS_OUTPUT: Final = _output(
    {
        "scope": {"type": "string"},
        "branches": {"type": "string"},
        "sessions": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "id": {"type": "string"},
                    "file": {"type": "string"},
                    "cwd": {"type": ["string", "null"]},
                    "mtime": {"type": "integer"},
                    "entryCount": {"type": "integer"},
                    "title": {"type": "string"},
                    "firstPrompt": {"type": "string"},
                    "counts": {
                        "type": "object",
                        "properties": {
                            "prompts": {"type": "integer"},
                            "toolResults": {"type": "integer"},
                            "failed": {"type": "integer"},
                        },
                        "required": ["prompts", "toolResults", "failed"],
                    },
                    "sidechain": {"type": "boolean"},
                    "parentSession": {"type": "string"},
                    "archived": {"type": "boolean"},
                },
                "required": ["id", "file", "entryCount"],
            },
        },
        "coverage": _COVERAGE,
    },
    ["sessions"],
)
CATALOG_OUTPUT: Final = _output(
    {
        "total": {"type": "integer"},
        "agents": {"type": "array", "items": _OBJECT},
        "coverage": _COVERAGE,
    },
    ["total", "agents", "coverage"],
)

_FOLLOW = (
    "Every call token in a result ({ref, args}: a hit's `follow`, a page's `next`) is followed "
    "by calling the tool it names (memory.recall → memory_recall, memory.expand → "
    "memory_expand) with its `args` unchanged."
)


class Tool:
    """One MCP tool: its action, schema and description."""

    __slots__ = ("action", "description", "name", "op", "output", "schema", "title")

    def __init__(
        self,
        name: str,
        action: str,
        op: str,
        title: str,
        schema: dict[str, Any],
        text: str,
        output: dict[str, Any] | None = None,
    ) -> None:
        self.name, self.action, self.op, self.title = name, action, op, title
        self.schema = schema
        self.description = text
        self.output = output


TOOLS: Final = {
    t.name: t
    for t in (
        Tool(
            "memory_recall",
            "memory.recall",
            "recall",
            "Search past agent sessions",
            RECALL_SCHEMA,
            "Search the local index of past coding-agent sessions (Pi, Claude Code, Codex, "
            "Oh My Pi, …): "
            "ranked, bounded evidence as {total, hits, next, coverage}. An entry hit shows a "
            "snippet; its `follow` (memory.expand) reads the exact entry. A cold session hit's "
            "`follow` (memory.recall) finds the exact entries in that session. " + _FOLLOW + " "
            "Empty `hits` prove absence only when coverage.complete is true. Use scope "
            "`project` or `global` to look beyond the newest session; omit `query` and pass "
            "exact `ref`/`tool`/`outcome` filters (names from memory_catalog) to list "
            "operations, e.g. failed bash calls.",
            RECALL_OUTPUT,
        ),
        Tool(
            "memory_expand",
            "memory.expand",
            "expand",
            "Read exact session entries",
            EXPAND_SCHEMA,
            "Read exact entries of one session, complete and untruncated: pass a recall hit's "
            "follow.args, or a session with indices / entryIds / operationAddresses / "
            "entryRange, optionally with before/after context around one anchor. Text longer "
            "than maxChars comes in chunks with textRange {start, end, total, complete}; "
            "while `next` is not null call memory_expand with next.args to continue. An "
            "append to the session since the token was issued answers `stale_pointer`: "
            "search again.",
            EXPAND_OUTPUT,
        ),
        Tool(
            "memory_sessions",
            "memory.sessions",
            "sessions",
            "List indexed sessions",
            SESSIONS_SCHEMA,
            "List the sessions a scope selects, newest first: id, file, cwd, mtime, entry "
            "count and tier, the title the agent recorded (if any), and (where read) the first "
            "prompt and counts of prompts, tool results and failures. Use a row's `file` as "
            "memory_expand's `session` or in scope `session:<file>` for memory_recall.",
            SESSIONS_OUTPUT,
        ),
        Tool(
            "memory_catalog",
            "memory.catalog",
            "catalog",
            "Capability heads seen in history",
            CATALOG_SCHEMA,
            "The capabilities the indexed sessions actually used, as a tree agent → provider "
            "→ action/tool, each head with its exact `tool` and `ref`, entry count, failures, "
            "outcomes, sessions and lastSeen (epoch ms), derived from typed session fields "
            "only. Pick an exact ref/tool (and outcome) here, then call memory_recall with "
            "it; each head's `follow` is that call. Scope defaults to `project`.",
            CATALOG_OUTPUT,
        ),
    )
}


# ------------------------------------------------------------------------------- calls


def _problem(code: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message}}


def _unwrap(tool: Tool, arguments: Mapping[str, Any]) -> Mapping[str, Any]:
    """Accept a whole call token as the arguments of the tool it names."""
    if set(arguments) == {"ref", "args"} and isinstance(arguments.get("args"), Mapping):
        if arguments["ref"] != tool.action:
            raise InvalidArgument(
                f"this call token is for {arguments['ref']!r}; call "
                f"{str(arguments['ref']).replace('.', '_')} with its args instead"
            )
        inner: Mapping[str, Any] = arguments["args"]
        return inner
    return arguments


def _utf8_safe(value: Any) -> Any:
    """*value* with every string JSON-RPC cannot carry spelled as its bytes, ``\\xNN`` escaped.

    Only file names that are not UTF-8 hold lone surrogates here (``os.fsdecode`` strings;
    entry text is cleaned of them at index time). The SDK's JSON writer refuses those and
    would send no reply at all; the escaped name is readable and ``_named_path`` maps it back.
    """
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return os.fsencode(value).decode("utf-8", "backslashreplace")
        return value
    if isinstance(value, dict):
        return {k: _utf8_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_utf8_safe(v) for v in value]
    return value


def _named_path(text: str) -> str:
    """The file a ``_utf8_safe`` name stands for, when *text* names no file as it is."""
    if "\\x" not in text or os.path.lexists(text):
        return text
    try:
        name = os.fsdecode(text.encode("utf-8").decode("unicode_escape").encode("latin-1"))
    except (UnicodeDecodeError, UnicodeEncodeError):
        return text
    return name if os.path.lexists(name) else text


def _paths_back(arguments: Mapping[str, Any]) -> Mapping[str, Any]:
    session, scope = arguments.get("session"), arguments.get("scope")
    changed = dict(arguments)
    if isinstance(session, str):
        changed["session"] = _named_path(session)
    if isinstance(scope, str) and scope.startswith("session:"):
        changed["scope"] = "session:" + _named_path(scope[len("session:") :])
    return changed


def _fit_sessions(result: dict[str, Any]) -> dict[str, Any]:
    """Keep a long session listing inside the envelope, saying how many rows were left out."""
    rows = result.get("sessions")
    if not isinstance(rows, list) or json_length(result) <= RESPONSE_MAX_CHARS:
        return result
    total = len(rows)
    kept = list(rows)
    while kept and json_length({**result, "sessions": kept, "omittedSessions": 1}) > (
        RESPONSE_MAX_CHARS
    ):
        kept = kept[: max(0, len(kept) - max(1, len(kept) // 8))]
    return {**result, "sessions": kept, "omittedSessions": total - len(kept)}


def _times(args: Mapping[str, Any]) -> Mapping[str, Any]:
    """``since`` / ``until`` in the CLI's forms (``7d``, ISO dates) become epoch ms."""
    from query.timespec import TimeSpecError, parse_time

    out: dict[str, Any] | None = None
    for key in ("since", "until"):
        value = args.get(key)
        if isinstance(value, str):
            try:
                ms = parse_time(value, end_of_day=key == "until")
            except TimeSpecError as exc:
                raise InvalidArgument(f"{key}: {exc}") from None
            out = {**(out or args), key: ms}
    return args if out is None else out


def call_tool(
    backend: Backend, name: str, arguments: Mapping[str, Any] | None, *, cwd: str
) -> tuple[dict[str, Any], bool]:
    """``(result object, is_error)`` for one tool call; never raises for bad input."""
    if arguments is not None and set(arguments) == {_REFUSED}:
        return _problem("invalid_argument", str(arguments[_REFUSED])), True
    tool = TOOLS.get(name)
    if tool is None:
        return _problem("unknown_tool", f"no tool {name!r}; tools: {', '.join(TOOLS)}"), True
    try:
        args = _times(_paths_back(_unwrap(tool, arguments or {})))
        runner = getattr(backend, tool.op)
        result: dict[str, Any] = runner(args, cwd=cwd)
    except InvalidArgument as exc:
        return _problem("invalid_argument", str(exc)), True
    except SnapshotMissing as exc:
        return _problem("no_index", str(exc)), True
    except IndexOutdated as exc:
        return _problem(exc.code, str(exc)), True
    except StoreError as exc:
        return _problem("index_damaged", str(exc)), True
    except QueryError as exc:
        return _problem(str(getattr(exc, "code", "query_error")), str(exc)), True
    if tool.op == "sessions":
        result = _fit_sessions(result)
    return result, False


def build_server(backend: Backend, *, cwd: str | None = None) -> Server[Any]:
    """The MCP server object answering through *backend* (run it over any transport)."""
    import anyio.to_thread
    import mcp_types as types
    from mcp.server.lowlevel import Server

    from query.transport import encode

    where = cwd or os.getcwd()
    listed = [
        types.Tool(
            name=t.name,
            title=t.title,
            description=t.description,
            input_schema=t.schema,
            output_schema=t.output,
            annotations=types.ToolAnnotations(
                title=t.title,
                read_only_hint=True,
                destructive_hint=False,
                idempotent_hint=True,
                open_world_hint=False,
            ),
        )
        for t in TOOLS.values()
    ]

    async def on_list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def on_call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        arguments = params.arguments

        def work() -> tuple[dict[str, Any], bool]:
            return call_tool(backend, params.name, arguments, cwd=where)

        result, failed = await anyio.to_thread.run_sync(work)
        result = _utf8_safe(result)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=encode(result).decode("utf-8"))],
            structured_content=result,
            is_error=failed,
        )

    return Server(
        SERVER_NAME,
        version=_version(),
        instructions="Memory of past coding-agent sessions. Start with memory_recall "
        "(scope `project` for this directory), read hits with memory_expand via their "
        "`follow` tokens, and use memory_catalog to find exact tool/ref names. " + _FOLLOW,
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
    )


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("sessiondex")
    except PackageNotFoundError:
        return "0"


# A ``tools/call`` whose arguments the SDK cannot take (nested deeper than its JSON reader
# allows) comes to ``call_tool`` as these arguments, so it is answered instead of dropped.
_REFUSED: Final = "__sessiondex_refused__"


def guard_line(line: str) -> str:
    """*line*, or, when the SDK would drop it without a reply, a request it answers.

    The SDK's reader refuses a message nested 200+ levels deep and sends no reply at all, so
    the client waits forever. Such a request still parses here (orjson reads 1024 levels): a
    ``tools/call`` becomes a call with ``_REFUSED`` arguments, which ``call_tool`` answers
    ``invalid_argument``; so does any other method (the SDK drops an unknown one unanswered),
    whose client then gets that error result for its id.
    """
    import mcp_types as types

    try:
        types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        return line
    except ValueError:
        pass
    try:
        message = orjson.loads(line)
    except orjson.JSONDecodeError:
        return line  # not JSON at all (or deeper still): the SDK reports it its own way
    if not isinstance(message, dict) or "id" not in message or "method" not in message:
        return line
    params = message.get("params")
    name = params.get("name") if isinstance(params, dict) else None
    reason = (
        f"the {message['method']!s:.40} request is nested too deeply to read (at most 200 levels)"
    )
    arguments = {"name": name if isinstance(name, str) else "", "arguments": {_REFUSED: reason}}
    refused = {"jsonrpc": "2.0", "id": message["id"], "method": "tools/call", "params": arguments}
    return orjson.dumps(refused).decode() + "\n"


class _GuardedStdin:
    """Standard input as the SDK's transport reads it (UTF-8 lines), through ``guard_line``."""

    def __init__(self) -> None:
        import io
        import sys

        import anyio

        text = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace")
        self._lines = aiter(anyio.wrap_file(text))

    def __aiter__(self) -> _GuardedStdin:
        return self

    async def __anext__(self) -> str:
        line: str = await anext(self._lines)
        return guard_line(line)


async def serve_stdio(backend: Backend, cwd: str | None = None) -> None:
    from mcp.server.stdio import stdio_server

    server = build_server(backend, cwd=cwd)
    stdin: Any = _GuardedStdin()
    async with stdio_server(stdin=stdin) as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


# -------------------------------------------------------------------------------- CLI


def _live_backend(config: Config, server: ServerMode) -> Backend:
    """A Backend whose in-process engine follows a change feed: an MCP server is long-lived.

    (``transport.Backend`` makes a plain one-shot ``Engine``; it has no option for this yet.)
    """
    from query.engine import Engine
    from query.transport import Backend

    class LiveBackend(Backend):
        @property
        def engine(self) -> Engine:
            with self._lock:
                if self._engine is None:
                    self._engine = Engine(self.config, changes=True)
                return self._engine

    return LiveBackend(config, server=server)


def run_mcp(ns: Any) -> int:
    import sys

    import anyio

    from query.collector import configure_for_long_life
    from store.config import ConfigError, load_config

    configure_for_long_life()
    try:
        config = load_config(ns.config)
    except ConfigError as exc:
        sys.stderr.write(f"query: {exc}\n")
        return EXIT_USAGE
    cwd = os.path.abspath(ns.cwd) if ns.cwd else os.getcwd()
    backend = _live_backend(config, "off" if ns.no_server else "auto")
    with backend, contextlib.suppress(KeyboardInterrupt):
        anyio.run(serve_stdio, backend, cwd)
    return EXIT_OK
