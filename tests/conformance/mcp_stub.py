"""A tiny stdio MCP server for the conformance scenarios: plain JSON-RPC, starts in milliseconds.

Real clients abandon a server that is slow to start (Claude Code's ``-p`` mode sends its first
model request without waiting), so this speaks newline-delimited JSON-RPC 2.0 with the standard
library only. Tools: ``lookup`` answers a fixed text; ``explode`` returns an error result
(``isError: true``), which is how an MCP server reports a failed call.

Run: ``python mcp_stub.py`` (the server's name is the one its client registers it under).
"""

from __future__ import annotations

import json
import sys
from typing import Any

LOOKUP_ANSWER = "needle found: the answer is NEEDLE-LOOKUP-RESULT"
EXPLODE_ERROR = "explode failed: NEEDLE-EXPLODE-ERROR"

TOOLS = [
    {
        "name": "lookup",
        "description": "Look up a word in the needle index.",
        "inputSchema": {
            "type": "object",
            "properties": {"word": {"type": "string"}},
            "required": ["word"],
        },
    },
    {
        "name": "explode",
        "description": "Always fails.",
        "inputSchema": {"type": "object", "properties": {"why": {"type": "string"}}},
    },
]


def answer(request: dict[str, Any]) -> dict[str, Any] | None:
    method = request.get("method")
    params = request.get("params") or {}
    if "id" not in request:
        return None  # a notification
    result: dict[str, Any]
    if method == "initialize":
        result = {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": "needle", "version": "1.0.0"},
        }
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "tools/call":
        name = params.get("name")
        if name == "lookup":
            word = (params.get("arguments") or {}).get("word", "")
            result = {"content": [{"type": "text", "text": f"{LOOKUP_ANSWER} ({word})"}]}
        elif name == "explode":
            result = {"content": [{"type": "text", "text": EXPLODE_ERROR}], "isError": True}
        else:
            error = {"code": -32602, "message": f"unknown tool {name}"}
            return {"jsonrpc": "2.0", "id": request["id"], "error": error}
    elif method == "ping":
        result = {}
    elif method in ("resources/list", "prompts/list", "resources/templates/list"):
        key = {"resources/list": "resources", "prompts/list": "prompts"}.get(
            method, "resourceTemplates"
        )
        result = {key: []}
    else:
        error = {"code": -32601, "message": f"method not found: {method}"}
        return {"jsonrpc": "2.0", "id": request["id"], "error": error}
    return {"jsonrpc": "2.0", "id": request["id"], "result": result}


def main() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            request = json.loads(line)
        except ValueError:
            continue
        reply = answer(request)
        if reply is not None:
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
