"""The `pipeline` command: parse → call the library → render; one error funnel.

    pipeline run --once [--config FILE] [--processes N]   catch up and exit
    pipeline status [--json] [--config FILE]               coverage and health
    pipeline rebuild [--config FILE]                       delete derived state, index again
    pipeline config [--config FILE]                        print the effective configuration
    pipeline generate --out DIR --sessions N --mean-kb K   write a synthetic corpus

Exit codes: 0 done; 1 done, but some sessions could not be indexed (a bug: see the log);
2 bad arguments or configuration; 3 the index is locked by another writer; 4 no index yet.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import orjson
import structlog

from pipeline import __version__
from pipeline.indexer import build_index, tty_progress
from pipeline.logs import configure_logging
from pipeline.status import collect_status, render_status
from store.config import ConfigError, load_config
from store.errors import StoreError, StoreLocked
from store.writer import StoreWriter

__all__ = ["main"]

EXIT_OK, EXIT_PARTIAL, EXIT_USAGE, EXIT_LOCKED, EXIT_NO_INDEX = 0, 1, 2, 3, 4

log = structlog.get_logger()


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="pipeline",
        description="Index coding-agent session logs (Pi, Claude Code, Codex) into sessiondex.",
        epilog="Example: pipeline run --once --config ~/.config/sessiondex/config.toml",
    )
    p.add_argument("--version", action="version", version=f"sessiondex {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    def common(sp: argparse.ArgumentParser) -> None:
        sp.add_argument(
            "--config",
            help="configuration TOML (default: $SESSIONDEX_CONFIG, "
            "then $XDG_CONFIG_HOME/sessiondex/config.toml)",
        )
        sp.add_argument("--log-json", action="store_true", help="log JSON lines to stderr")
        sp.add_argument("-q", "--quiet", action="store_true", help="log warnings and errors only")

    run = sub.add_parser(
        "run", help="index the configured roots", epilog="Example: pipeline run --once"
    )
    common(run)
    run.add_argument(
        "--once",
        action="store_true",
        help="catch up with every root, publish a generation and exit",
    )
    run.add_argument(
        "--processes", type=int, default=None, help="worker processes (default: one per CPU)"
    )
    run.add_argument("--json", action="store_true", help="print the run report as JSON")

    st = sub.add_parser(
        "status", help="coverage and health of the index", epilog="Example: pipeline status --json"
    )
    common(st)
    st.add_argument("--json", action="store_true", help="print JSON")

    rb = sub.add_parser(
        "rebuild",
        help="delete every derived record and index again",
        epilog="Example: pipeline rebuild",
    )
    common(rb)
    rb.add_argument("--processes", type=int, default=None)

    cf = sub.add_parser(
        "config",
        help="print the effective configuration",
        epilog="Example: pipeline config --config my.toml",
    )
    common(cf)

    gen = sub.add_parser(
        "generate",
        help="write a deterministic synthetic session corpus",
        epilog="Example: pipeline generate --out /tmp/corpus --sessions 300",
    )
    gen.add_argument("rest", nargs=argparse.REMAINDER, help="arguments of pipeline.corpus")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "generate":
        from pipeline.corpus import main as corpus_main

        return corpus_main(list(args.rest))
    configure_logging(json=True if args.log_json else None, level=30 if args.quiet else 20)
    try:
        config = load_config(args.config)
        if args.command == "config":
            sys.stdout.write(config.to_toml())
            return EXIT_OK
        if args.command == "status":
            status = collect_status(config)
            if args.json:
                sys.stdout.write(
                    orjson.dumps(status.as_dict(), option=orjson.OPT_INDENT_2).decode()
                )
                sys.stdout.write("\n")
            else:
                sys.stdout.write(render_status(status))
            return EXIT_OK
        if args.command == "rebuild":
            StoreWriter(config.index_dir).wipe()
            report = build_index(config, processes=args.processes, progress=tty_progress())
            return EXIT_PARTIAL if report.failed and report.errors else EXIT_OK
        if args.command == "run":
            if not args.once:
                sys.stderr.write(
                    "pipeline run: the always-on mode is not available yet; "
                    "use `pipeline run --once` to catch up and exit\n"
                )
                return EXIT_USAGE
            report = build_index(config, processes=args.processes, progress=tty_progress())
            if args.json:
                sys.stdout.write(orjson.dumps(report.as_dict()).decode() + "\n")
            return EXIT_PARTIAL if report.errors else EXIT_OK
    except ConfigError as exc:
        sys.stderr.write(f"pipeline: {exc}\n")
        return EXIT_USAGE
    except StoreLocked as exc:
        sys.stderr.write(f"pipeline: {exc}\n")
        return EXIT_LOCKED
    except StoreError as exc:
        sys.stderr.write(f"pipeline: {exc}\n")
        return EXIT_NO_INDEX
    raise AssertionError(f"unhandled command {args.command}")
