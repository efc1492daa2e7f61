"""The long-running `query` subcommands, `serve` and `mcp`: their arguments.

Kept apart from ``query.server`` and ``query.mcp`` so that building the `query` parser loads
neither (nor the engine, nor the MCP SDK): a `query recall` answered by a running server pays
only for what it uses. Each subcommand's ``run`` imports its module when it is chosen.
"""

from __future__ import annotations

import argparse
from typing import Any, Final

from query.ui.options import add_http_argument

__all__ = ["add_mcp_parser", "add_serve_parser"]

# ServeOptions' defaults, repeated so the parser does not import the server.
REQUEST_TIMEOUT: Final = 30.0
MAX_REQUEST_BYTES: Final = 1 << 20
IDLE_TIMEOUT: Final = 300.0
MAX_CONNECTIONS: Final = 64


def _run_serve(ns: argparse.Namespace) -> int:
    from query.server import run_serve

    return run_serve(ns)


def _run_mcp(ns: argparse.Namespace) -> int:
    from query.mcp import run_mcp

    return run_mcp(ns)


def add_serve_parser(sub: Any) -> None:
    """``query serve``: registered on the ``query`` command's subparsers."""
    sp = sub.add_parser(
        "serve",
        help="run the read-only query server on the index socket (until SIGTERM/SIGINT)",
        description="Serve recall / expand / sessions / catalog on <indexDir>/serve/query.sock "
        "so that `query`, `query mcp` and query.client answer from one warm process. "
        "Exit codes: 0 stopped cleanly; 1 the socket cannot be bound; 2 bad configuration; "
        "3 another server owns the socket.",
        epilog="Example: query serve --config ~/.config/sessiondex/config.toml",
    )
    sp.add_argument("--config", help="configuration TOML (default: as every command)")
    sp.add_argument(
        "--request-timeout",
        type=float,
        default=REQUEST_TIMEOUT,
        help="seconds before a request is answered with request_timeout (default %(default)s)",
    )
    sp.add_argument(
        "--max-request-bytes",
        type=int,
        default=MAX_REQUEST_BYTES,
        help="largest request frame accepted (default %(default)s)",
    )
    sp.add_argument(
        "--idle-timeout",
        type=float,
        default=IDLE_TIMEOUT,
        help="seconds before an idle client connection is closed (default %(default)s)",
    )
    sp.add_argument(
        "--max-connections",
        type=int,
        default=MAX_CONNECTIONS,
        help="concurrent client connections; more are told to answer in-process",
    )
    sp.add_argument("--quiet", action="store_true", help="log warnings and errors only")
    add_http_argument(sp)
    sp.set_defaults(run=_run_serve)


def add_mcp_parser(sub: Any) -> None:
    """``query mcp``: registered on the ``query`` command's subparsers."""
    sp = sub.add_parser(
        "mcp",
        help="serve the index to MCP clients (Claude Code, Codex) over stdio",
        description="A Model Context Protocol server on stdin/stdout with the tools "
        "memory_recall, memory_expand, memory_sessions and memory_catalog. Read-only; answers "
        "through `query serve` when it runs, in-process otherwise.",
        epilog="Example: claude mcp add sessiondex -- query mcp",
    )
    sp.add_argument("--config", help="configuration TOML (default: as every command)")
    sp.add_argument(
        "--cwd",
        help="directory for `session` / `project` scopes (default: where the client started "
        "this server)",
    )
    sp.add_argument(
        "--no-server", action="store_true", help="answer in-process even when `query serve` runs"
    )
    sp.set_defaults(run=_run_mcp)
