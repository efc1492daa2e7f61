"""`query ui` and `query serve --http`: their arguments (no web library imported here)."""

from __future__ import annotations

import argparse
from typing import Any, Final

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "add_http_argument", "add_ui_parser"]

DEFAULT_HOST: Final = "127.0.0.1"
DEFAULT_PORT: Final = 8765


def _run_ui(ns: argparse.Namespace) -> int:
    from query.ui.run import run_ui

    return run_ui(ns)


def add_ui_parser(sub: Any) -> None:
    """``query ui``: registered on the ``query`` command's subparsers."""
    sp = sub.add_parser(
        "ui",
        help="a local, read-only web page to search, read and follow sessions",
        description="Serve the web UI on 127.0.0.1 (loopback only) until SIGTERM/SIGINT. The "
        "URL printed at start carries a per-start access token; requests without it are "
        "refused. Answers through `query serve` when it runs, in-process otherwise. Exit codes: "
        "0 stopped cleanly; 1 the port cannot be bound; 2 bad arguments or configuration.",
        epilog="Example: query ui --port 8765",
    )
    sp.add_argument("--config", help="configuration TOML (default: as every command)")
    sp.add_argument(
        "--cwd", help="directory for `session` / `project` scopes (default: the current one)"
    )
    sp.add_argument(
        "--host",
        default=DEFAULT_HOST,
        help="loopback address to bind (default %(default)s; any other address is refused)",
    )
    sp.add_argument(
        "--port",
        type=int,
        default=DEFAULT_PORT,
        help="TCP port (default %(default)s; 0 picks a free one)",
    )
    sp.add_argument(
        "--no-server", action="store_true", help="answer in-process even when `query serve` runs"
    )
    sp.set_defaults(run=_run_ui)


def add_http_argument(sp: argparse.ArgumentParser) -> None:
    """``query serve --http PORT``: the web UI beside the socket, on the server's own engine."""
    sp.add_argument(
        "--http",
        type=int,
        metavar="PORT",
        help="also serve the web UI on 127.0.0.1:PORT (0 picks a free one); see `query ui`",
    )
