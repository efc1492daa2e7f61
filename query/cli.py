"""The `query` command: parse → Engine → render; one error funnel.

    query recall [TEXT] [--scope S] [--mode M] [--match any|all] [filters…]   search
    query expand SESSION [--indices 1,2] [--entry-id ID] [--range a:b] …    read entries
    query sessions [--scope S] [--limit N]                                   list sessions
    query secrets [--scope S]                  where credentials were redacted (local only)
    query call '<token json>'                                                run a follow/next
    query catalog [--scope S] [--agent A]                     capability heads seen in history
    query export SESSION [--format md|html|jsonl|source] [--out FILE]   one session as a file
    query serve                                   the read-only query server on the index socket
    query mcp                                        a Model Context Protocol server over stdio
    query ui [--port N]                     a local read-only web page (127.0.0.1, token URL)

recall / expand / sessions / call / catalog are answered by a running ``query serve`` when one
is listening on the index socket, and in-process otherwise (``--no-server`` forces that): the
output is the same either way.

Output is human-readable on a terminal and the seed's JSON objects otherwise (``--json`` /
``--text`` force either). Exit codes (``store.exits``, shared with `pipeline`): 0 answered;
1 the index is damaged or the query server failed; 2 bad arguments or configuration; 3 another
`query serve` owns the socket (serve); 4 nothing indexed yet; 6 the request was answered with
an error (stale pointer, unknown or ambiguous session, missing address…). A reader that closes
stdout early (``| head``) ends the command quietly.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any

from query.args import OUTCOMES, QUERY_MATCHES, QUERY_MODES, ROLES, TOOL_FAMILIES
from query.commands import add_mcp_parser, add_serve_parser
from query.errors import InvalidArgument, QueryError
from query.render import printable, render
from query.timespec import TimeSpecError, parse_time
from query.transport import Backend
from query.ui.options import add_ui_parser
from store import jsonio
from store.config import ConfigError, load_config
from store.errors import IndexOutdated, StoreError
from store.exits import (
    EXIT_ANSWERED_ERROR,
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    exit_for_store_error,
    quiet_on_closed_pipe,
)
from store.names import AGENTS, BRANCH_MODES
from store.streams import print_file_names_as_bytes

__all__ = ["main"]


class _Usage(Exception):
    pass


def _scoped(sp: argparse.ArgumentParser) -> None:
    """The options of a command over a scope of sessions (catalog, secrets)."""
    sp.add_argument("--scope", help="project (default), session, global or session:<id-or-path>")
    sp.add_argument("--agent", choices=AGENTS)
    sp.add_argument("--branches", choices=BRANCH_MODES)
    _common(sp)


def _common(sp: argparse.ArgumentParser) -> None:
    sp.add_argument(
        "--config",
        help="configuration TOML (default: $SESSIONDEX_CONFIG, "
        "then $XDG_CONFIG_HOME/sessiondex/config.toml)",
    )
    sp.add_argument("--cwd", help="act as if called from this directory (default: the current one)")
    sp.add_argument(
        "--no-server",
        action="store_true",
        help="answer in-process even when `query serve` is running",
    )
    out = sp.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print the result object as JSON")
    out.add_argument(
        "--text",
        dest="text_output",
        action="store_true",
        help="print for people (default on a terminal)",
    )


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="query",
        description="Search and read the sessiondex memory index (recall, expand, sessions).",
        epilog="Example: query recall 'flaky test' --scope project",
    )
    p.add_argument("--version", action="version", version=f"sessiondex {_version()}")
    sub = p.add_subparsers(dest="command", required=True)

    rc = sub.add_parser(
        "recall",
        help="ranked, bounded search; without TEXT, browse by filters",
        epilog="Example: query recall timeout --scope global --tool bash --outcome failed",
    )
    rc.add_argument("text", nargs="?", help="what to look for (omit to browse)")
    rc.add_argument("--scope", help="session (default), project, global or session:<id-or-path>")
    rc.add_argument("--mode", choices=QUERY_MODES, help="literal (default), phrase or regex")
    rc.add_argument("--match", choices=QUERY_MATCHES, help="literal terms: any (default) or all")
    rc.add_argument("--role", choices=ROLES)
    rc.add_argument(
        "--sidechain",
        choices=("true", "false", "any"),
        help="true: only subagents' entries; false: only the session's own; any (default)",
    )
    rc.add_argument("--tool")
    rc.add_argument("--ref", help="exact capability ref, e.g. pi.bash")
    rc.add_argument("--provider")
    rc.add_argument("--action")
    rc.add_argument("--outcome", choices=OUTCOMES)
    rc.add_argument("--kind", choices=TOOL_FAMILIES, help="tool family, e.g. shell or mcp")
    rc.add_argument("--agent", choices=AGENTS)
    rc.add_argument("--since", help="epoch ms, ISO date/time, or an age like 7d / 12h / 30m")
    rc.add_argument("--until", help="epoch ms, ISO date/time (a date means its end), or an age")
    rc.add_argument("--branches", choices=BRANCH_MODES)
    rc.add_argument("--page-size", type=int)
    rc.add_argument("--snippet-chars", type=int)
    rc.add_argument("--offset", type=int)
    rc.add_argument("--range", dest="entry_range", help="entry index range a:b (session: scope)")
    _common(rc)

    ex = sub.add_parser(
        "expand",
        help="read exact entries of one session, losslessly",
        epilog="Example: query expand ~/.pi/agent/sessions/--w--/s.jsonl --indices 4 --after 2",
    )
    ex.add_argument("session", help="session file path or session id")
    ex.add_argument("--indices", help="comma-separated entry indices, e.g. 1,2,7")
    ex.add_argument("--entry-id", action="append", default=[], help="stable entry id (repeat)")
    ex.add_argument(
        "--operation-address", action="append", default=[], help="operation address (repeat)"
    )
    ex.add_argument("--range", dest="entry_range", help="inclusive index range a:b")
    ex.add_argument("--before", type=int, help="entries before the one anchor (0..100)")
    ex.add_argument("--after", type=int, help="entries after the one anchor (0..100)")
    ex.add_argument("--max-chars", type=int, help="text budget per call (256..24000)")
    ex.add_argument("--max-entries", type=int, help="entries per call (1..20)")
    ex.add_argument("--entry-offset", type=int, help="continue from this selected entry")
    ex.add_argument("--text-offset", type=int, help="continue inside that entry (UTF-16 units)")
    ex.add_argument("--branches", choices=BRANCH_MODES)
    ex.add_argument(
        "--reveal",
        action="store_true",
        help="show redacted credentials, re-read from the session file (local only)",
    )
    _common(ex)

    ss = sub.add_parser(
        "sessions", help="list the sessions a scope selects", epilog="Example: query sessions"
    )
    ss.add_argument("--scope", help="session (default), project, global or session:<id-or-path>")
    ss.add_argument("--limit", type=int, help="at most this many rows (1..500)")
    ss.add_argument("--agent", choices=AGENTS)
    ss.add_argument("--branches", choices=BRANCH_MODES)
    _common(ss)

    cl = sub.add_parser(
        "call",
        help="execute a follow/next call token verbatim",
        epilog="""Example: query call '{"ref":"memory.expand","args":{...}}'  (- reads stdin)""",
    )
    cl.add_argument("token", help="the call token JSON, or - to read it from stdin")
    _common(cl)

    ca = sub.add_parser(
        "catalog",
        help="the capability heads (agent, provider, action/tool) seen in history",
        epilog="Example: query catalog --scope global --agent pi",
    )
    _scoped(ca)

    se = sub.add_parser(
        "secrets",
        help="where credentials were redacted: session, entries, kind, fingerprint (local only)",
        epilog="Example: query secrets --scope global",
    )
    _scoped(se)

    xp = sub.add_parser(
        "export",
        help="write one session as Markdown, self-contained HTML, JSON lines, or its exact "
        "source bytes (from the archive when the file is gone)",
        epilog="Example: query export claude:5e55107a-… --format html --out session.html",
    )
    xp.add_argument("session", help="session file path or session id")
    xp.add_argument(
        "--format",
        dest="export_format",
        choices=("md", "html", "jsonl", "source"),
        default="md",
        help="md (default), html (one file, readable offline), jsonl (a header line, then one "
        "entry per line) or source (the bytes it was indexed from)",
    )
    xp.add_argument("--branches", choices=BRANCH_MODES, help="active (default) or all")
    xp.add_argument("--out", help="write to this file (default: standard output)")
    xp.add_argument("--config", help="configuration TOML (default: as every command)")
    xp.add_argument("--cwd", help="resolve a relative path from here")

    add_serve_parser(sub)
    add_mcp_parser(sub)

    co = sub.add_parser(
        "completion",
        help="print a shell completion script for `query`",
        epilog="Example: query completion bash > ~/.local/share/bash-completion/completions/query",
    )
    co.add_argument("shell", choices=("bash", "zsh", "tcsh"))

    add_ui_parser(sub)
    return p


def _version() -> str:
    """The installed distribution's version (query may not import pipeline, which holds it)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("sessiondex")
    except PackageNotFoundError:
        return "(not installed: run `pip install -e .`)"


def _local(config: Any, ns: argparse.Namespace, cwd: str) -> tuple[str, dict[str, Any]]:
    """`secrets` and `expand --reveal`: answered in this process only, never by a server."""
    from query.args import parse_sessions
    from query.engine import Engine
    from query.secrets import reveal, secrets
    from store.redact import redactor

    with Engine(config) as engine:
        gen = engine.refresh()
        if ns.command == "secrets":
            args: dict[str, Any] = {"scope": ns.scope or "project"}
            _put(args, "agent", ns.agent)
            _put(args, "branches", ns.branches)
            req = parse_sessions(args)
            return "memory.secrets", secrets(gen, req, cwd=cwd, roots=engine.roots)
        result = engine.expand(_expand_args(ns), cwd=cwd)
        found = reveal(
            result,
            gen,
            ns.session,
            branches=ns.branches or "active",
            cwd=cwd,
            roots=engine.roots,
            redactor=redactor(config.privacy.disabled_rules),
            archive=engine.archive,
        )
        return "memory.expand", found


def _range(text: str) -> dict[str, int]:
    first, colon, last = text.partition(":")
    try:
        if not colon:
            raise ValueError
        return {"first": int(first), "last": int(last)}
    except ValueError:
        raise _Usage(f"--range takes FIRST:LAST entry indices, e.g. 3:8 (got {text!r})") from None


def _put(args: dict[str, Any], key: str, value: Any) -> None:
    if value is not None:
        args[key] = value


def _recall_args(ns: argparse.Namespace) -> dict[str, Any]:
    args: dict[str, Any] = {}
    _put(args, "query", ns.text)
    _put(args, "queryMode", ns.mode)
    _put(args, "queryMatch", ns.match)
    _put(args, "scope", ns.scope)
    for key in (
        "role",
        "tool",
        "ref",
        "provider",
        "action",
        "outcome",
        "kind",
        "agent",
        "branches",
    ):
        _put(args, key, getattr(ns, key))
    if ns.sidechain is not None:
        args["sidechain"] = {"true": True, "false": False}.get(ns.sidechain, "any")
    try:
        if ns.since is not None:
            args["since"] = parse_time(ns.since)
        if ns.until is not None:
            args["until"] = parse_time(ns.until, end_of_day=True)
    except TimeSpecError as exc:
        raise _Usage(str(exc)) from None
    _put(args, "pageSize", ns.page_size)
    _put(args, "snippetChars", ns.snippet_chars)
    _put(args, "offset", ns.offset)
    if ns.entry_range is not None:
        args["entryRange"] = _range(ns.entry_range)
    return args


def _expand_args(ns: argparse.Namespace) -> dict[str, Any]:
    args: dict[str, Any] = {"session": ns.session}
    if ns.indices:
        try:
            args["indices"] = [int(i) for i in ns.indices.split(",") if i.strip()]
        except ValueError:
            raise _Usage(f"--indices takes comma-separated integers (got {ns.indices!r})") from None
    if ns.entry_id:
        args["entryIds"] = ns.entry_id
    if ns.operation_address:
        args["operationAddresses"] = ns.operation_address
    if ns.entry_range is not None:
        args["entryRange"] = _range(ns.entry_range)
    _put(args, "before", ns.before)
    _put(args, "after", ns.after)
    _put(args, "maxChars", ns.max_chars)
    _put(args, "maxEntries", ns.max_entries)
    _put(args, "entryOffset", ns.entry_offset)
    _put(args, "textOffset", ns.text_offset)
    _put(args, "branches", ns.branches)
    return args


def _token(text: str) -> dict[str, Any]:
    raw = sys.stdin.read() if text == "-" else text
    try:
        token = jsonio.loads(raw)
    except ValueError as exc:
        raise _Usage(f"the call token is not valid JSON: {exc}") from None
    if not isinstance(token, dict):
        raise _Usage('a call token is a JSON object {"ref": ..., "args": {...}}')
    return token


def _dump(result: dict[str, Any]) -> str:
    return jsonio.dumps(result).decode("utf-8")


def _as_text(ns: argparse.Namespace) -> bool:
    return bool(ns.text_output or (not ns.json and sys.stdout.isatty()))


_SELECTORS = ("indices", "entryIds", "operationAddresses", "entryRange")


def _whole_session(args: dict[str, Any], result: dict[str, Any]) -> bool:
    """No entry was asked for, and the session has some."""
    return (
        "error" not in result
        and not any(key in args for key in _SELECTORS)
        and not result.get("entries")
        and int(result.get("entryCount") or 0) > 0
    )


def _export(ns: argparse.Namespace) -> int:
    """`query export`: answered in this process (a file, not a result object)."""
    from query.engine import Engine
    from query.export import ExportError, export

    try:
        config = load_config(ns.config)
        cwd = os.path.abspath(ns.cwd) if ns.cwd else os.getcwd()
        with Engine(config) as engine:
            done = export(
                engine.refresh(),
                ns.session,
                fmt=ns.export_format,
                branches=ns.branches or "active",
                cwd=cwd,
                roots=engine.roots,
                freshness=engine.freshness,
            )
    except ConfigError as exc:
        sys.stderr.write(f"query: {exc}\n")
        return EXIT_USAGE
    except ExportError as exc:
        sys.stderr.write(f"query export: {exc.code}: {exc.message}\n")
        return EXIT_ANSWERED_ERROR
    except StoreError as exc:
        sys.stderr.write(f"query: {exc}\n")
        return exit_for_store_error(exc)
    if ns.out:
        with open(ns.out, "wb") as f:
            f.write(done.data)
        if done.state.archived:
            sys.stderr.write(f"query export: {done.state.path} is archived (its file is gone)\n")
    else:
        sys.stdout.flush()
        sys.stdout.buffer.write(done.data)
        sys.stdout.buffer.flush()
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    print_file_names_as_bytes()
    return quiet_on_closed_pipe(lambda: _main(argv))


def _main(argv: Sequence[str] | None) -> int:
    parser = _parser()
    ns = parser.parse_args(argv)
    if ns.command == "completion":
        import shtab  # only when asked: generating a script is not on any hot path

        sys.stdout.write(shtab.complete(parser, shell=ns.shell))
        return EXIT_OK
    if ns.command in ("serve", "mcp", "ui"):
        run: Any = ns.run
        code: int = run(ns)
        return code
    if ns.command == "export":
        return _export(ns)
    try:
        config = load_config(ns.config)
        cwd = os.path.abspath(ns.cwd) if ns.cwd else os.getcwd()
        with Backend(config, server="off" if ns.no_server else "auto") as engine:
            if ns.command == "secrets" or (ns.command == "expand" and ns.reveal):
                action, result = _local(config, ns, cwd)
            elif ns.command == "recall":
                action, result = "memory.recall", engine.recall(_recall_args(ns), cwd=cwd)
            elif ns.command == "expand":
                expand_args = _expand_args(ns)
                action, result = "memory.expand", engine.expand(expand_args, cwd=cwd)
                if _as_text(ns) and _whole_session(expand_args, result):
                    # `query expand FILE` for a person means "show me the session": read it
                    # from its first entry (pages follow with `next`), not only its header.
                    expand_args["entryRange"] = {"first": 0, "last": result["entryCount"] - 1}
                    result = engine.expand(expand_args, cwd=cwd)
            elif ns.command == "sessions":
                args: dict[str, Any] = {}
                _put(args, "scope", ns.scope)
                _put(args, "limit", ns.limit)
                _put(args, "agent", ns.agent)
                _put(args, "branches", ns.branches)
                action, result = "memory.sessions", engine.sessions(args, cwd=cwd)
            elif ns.command == "catalog":
                args = {}
                _put(args, "scope", ns.scope)
                _put(args, "agent", ns.agent)
                _put(args, "branches", ns.branches)
                action, result = "memory.catalog", engine.catalog(args, cwd=cwd)
            else:
                token = _token(ns.token)
                action = str(token.get("ref"))
                result = engine.call(token, cwd=cwd)
    except (_Usage, InvalidArgument, ConfigError) as exc:
        sys.stderr.write(f"query: {exc}\n")
        return EXIT_USAGE
    except IndexOutdated as exc:
        # a named state, not a failure: machine readers get the code as an error body
        if not _as_text(ns):
            sys.stdout.write(_dump({"error": {"code": exc.code, "message": str(exc)}}) + "\n")
        sys.stderr.write(f"query: {exc.code}: {exc}\n")
        return exit_for_store_error(exc)
    except StoreError as exc:
        sys.stderr.write(f"query: {exc}\n")
        return exit_for_store_error(exc)
    except QueryError as exc:
        sys.stderr.write(f"query: {exc}\n")
        return EXIT_FAILED
    if not _as_text(ns):
        text = _dump(result)
    elif action == "memory.catalog":
        from query.catalog import render_catalog

        text = printable(render_catalog(result))
    elif action == "memory.secrets":
        from query.secrets import render_secrets

        text = render_secrets(result)
    else:
        marked = ns.text if action == "memory.recall" and ns.mode != "regex" else None
        text = render(action, result, query=marked)
    sys.stdout.write(text + "\n")
    return EXIT_ANSWERED_ERROR if "error" in result else EXIT_OK
