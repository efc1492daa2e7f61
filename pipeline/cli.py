"""The `pipeline` command: parse → call the library → render; one error funnel.

    pipeline run [--config FILE] [--processes N]          the always-on indexer (until SIGTERM)
    pipeline run --once [--config FILE] [--processes N]   catch up and exit
    pipeline status [--json] [--config FILE]               coverage and health
    pipeline rebuild [--config FILE]                       delete derived state, index again
    pipeline config [--config FILE]                        print the effective configuration
    pipeline doctor [--json] [--config FILE]               is everything running and current?
    pipeline forget [SESSION…] [--project DIR] [--before DATE] [--agent A] [--dry-run]
                                                           remove sessions from index and archive
    pipeline completion bash|zsh|tcsh                      a shell completion script

Exit codes (``store.exits``, shared with `query`): 0 done; 1 done, but some sessions could not
be indexed (a bug: see the log), or the index is damaged; 2 bad arguments or configuration;
3 the index is locked by another writer; 4 no index yet; 5 a pipeline process could not start
(`pipeline run`; its traceback is in the log); 7 ``indexDir`` is not a sessiondex index;
`pipeline doctor` exits 1 when a check fails.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import replace

import structlog

from pipeline import __version__
from pipeline.logs import configure_logging
from stages.agents import default_roots
from store import jsonio
from store.agents import agent_names
from store.config import Config, ConfigError, load_config
from store.errors import DiskFull, StoreError, is_disk_full
from store.exits import (
    EXIT_BOOT_FAILED,
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    exit_for_store_error,
    quiet_on_closed_pipe,
)
from store.streams import print_file_names_as_bytes
from store.writer import StoreWriter

__all__ = ["EXIT_BOOT_FAILED", "EXIT_USAGE", "main"]

EXIT_PARTIAL = EXIT_FAILED  # done, but some sessions could not be indexed

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
        "run",
        help="index the configured roots, then keep the index current until stopped",
        epilog="Example: pipeline run (always on; stop with SIGTERM or Ctrl-C), "
        "pipeline run --once (catch up and exit)",
    )
    common(run)
    run.add_argument(
        "--once",
        action="store_true",
        help="catch up with every root, publish a generation and exit",
    )
    run.add_argument(
        "--processes",
        type=_positive_int,
        default=None,
        help="worker processes (default: one per CPU, at most 4 when always on)",
    )
    run.add_argument("--json", action="store_true", help="print the run report as JSON (--once)")
    run.add_argument(
        "--reconcile-seconds",
        type=_positive_float,
        default=None,
        help="always on: how often to rescan the roots for changes no event reported (default: 60)",
    )
    run.add_argument(
        "--merge-after",
        type=_positive_float,
        default=None,
        help="always on: seconds a session must be quiet before its appended deltas are "
        "merged into new records (default: 30)",
    )

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

    dr = sub.add_parser(
        "doctor",
        help="check that the pipeline and query server run, the sources are readable and the "
        "index is current; exit 1 when a check fails",
        epilog="Example: pipeline doctor --json",
    )
    common(dr)
    dr.add_argument("--json", action="store_true", help="print JSON")

    fg = sub.add_parser(
        "forget",
        help="remove sessions from the index and the archive for good, and never index them "
        "again (even while their files stay)",
        description="Select sessions by file path or id, and/or with --project, --before and "
        "--agent (every filter given must hold). Works whether or not `pipeline run` is "
        "running: then it waits for the pipeline to drop them.",
        epilog="Example: pipeline forget --project ~/work/secret --dry-run",
    )
    common(fg)
    fg.add_argument("sessions", nargs="*", help="session file paths or ids (agent:id, id, stem)")
    fg.add_argument("--project", help="sessions started in this folder or below it")
    fg.add_argument(
        "--before",
        help="sessions last written before: ISO date (2026-01-31), date-time or age (30d)",
    )
    fg.add_argument("--agent", choices=agent_names())
    fg.add_argument("--dry-run", action="store_true", help="list what would be forgotten")
    fg.add_argument("--json", action="store_true", help="print JSON")
    fg.add_argument(
        "--wait",
        type=_positive_float,
        default=60.0,
        help="seconds to wait for a running pipeline to drop them (default 60)",
    )

    co = sub.add_parser(
        "completion",
        help="print a shell completion script for `pipeline`",
        epilog="Example: pipeline completion bash > ~/.local/share/bash-completion/completions/"
        "pipeline",
    )
    co.add_argument("shell", choices=("bash", "zsh", "tcsh"))
    return p


def main(argv: Sequence[str] | None = None) -> int:
    print_file_names_as_bytes()
    return quiet_on_closed_pipe(lambda: _main(argv))


def _main(argv: Sequence[str] | None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "completion":
        import shtab  # only when asked: generating a script is not on any hot path

        sys.stdout.write(shtab.complete(parser, shell=args.shell))
        return EXIT_OK
    configure_logging(json=True if args.log_json else None, level=30 if args.quiet else 20)
    try:
        # Every registered agent's root is indexed: the file's, else its adapter's default.
        config = load_config(args.config, defaults=default_roots())
        if args.command == "config":
            sys.stdout.write(config.to_toml())
            return EXIT_OK
        if args.command == "status":
            from pipeline.status import collect_status, render_status

            status = collect_status(config)
            if args.json:
                sys.stdout.write(jsonio.dumps(status.as_dict(), indent=True).decode())
                sys.stdout.write("\n")
            else:
                sys.stdout.write(render_status(status))
            return EXIT_OK
        if args.command == "doctor":
            from pipeline.doctor import diagnose, render_diagnosis

            diagnosis = diagnose(config)
            if args.json:
                sys.stdout.write(jsonio.dumps(diagnosis.as_dict(), indent=True).decode() + "\n")
            else:
                sys.stdout.write(render_diagnosis(diagnosis))
            return EXIT_OK if diagnosis.ok else EXIT_FAILED
        if args.command == "forget":
            return _forget(config, args)
        if args.command == "rebuild":
            # the journal and checkpoints go too: a rebuild replays the sources from empty
            StoreWriter(config.index_dir).wipe()
            from pipeline.catchup import catch_up, tty_progress

            report = catch_up(config, processes=args.processes, progress=tty_progress())
            return EXIT_PARTIAL if report.failed and report.errors else EXIT_OK
        if args.command == "run":
            if not args.once:
                return _run_always_on(config, args)
            from pipeline.catchup import catch_up, tty_progress

            report = catch_up(config, processes=args.processes, progress=tty_progress())
            if args.json:
                sys.stdout.write(jsonio.dumps(report.as_dict()).decode() + "\n")
            return EXIT_PARTIAL if report.errors else EXIT_OK
    except ConfigError as exc:
        sys.stderr.write(f"pipeline: {exc}\n")
        return EXIT_USAGE
    except DiskFull as exc:
        sys.stderr.write(f"pipeline: {exc}\n")
        return EXIT_FAILED
    except StoreError as exc:
        sys.stderr.write(f"pipeline: {exc}\n")
        return exit_for_store_error(exc)
    except OSError as exc:
        if not is_disk_full(exc):
            raise
        # Out of room outside a record write (publishing, collecting, the journal).
        sys.stderr.write(f"pipeline: {DiskFull(config.index_dir)}\n")
        return EXIT_PARTIAL
    except Exception as exc:
        # imported here: only a catch-up starts a pool, and `pipeline run` imports none of it
        # on its way to the first append (issue 22 item 11)
        from pipeline.pool import TaskFailed, WorkerDied

        if not isinstance(exc, WorkerDied | TaskFailed):
            raise
        sys.stderr.write(f"pipeline: {exc}\nNothing new was published; the index is as before.\n")
        return EXIT_BOOT_FAILED
    raise AssertionError(f"unhandled command {args.command}")


def _forget(config: Config, args: argparse.Namespace) -> int:
    from pipeline.forget import ForgetError, Selection, forget, parse_before, render_forget

    try:
        selection = Selection(
            sessions=tuple(args.sessions),
            project=args.project,
            before_ns=parse_before(args.before) if args.before else None,
            agent=args.agent,
        )
        report = forget(config, selection, dry_run=args.dry_run, wait_s=args.wait)
    except ForgetError as exc:
        sys.stderr.write(f"pipeline forget: {exc}\n")
        return EXIT_USAGE
    if args.json:
        sys.stdout.write(jsonio.dumps(report.as_dict()).decode() + "\n")
    else:
        sys.stdout.write(render_forget(report))
    return EXIT_FAILED if report.pending else EXIT_OK


def _run_always_on(config: Config, args: argparse.Namespace) -> int:
    from pipeline.settings import RunSettings
    from pipeline.supervisor import ProcessSupervisor

    defaults = RunSettings()
    engine = defaults.engine
    if args.merge_after is not None:
        engine = replace(engine, merge_quiet_s=args.merge_after)
    settings = replace(
        defaults,
        workers=args.processes or defaults.workers,
        reconcile_s=args.reconcile_seconds or defaults.reconcile_s,
        engine=engine,
    )
    supervisor = ProcessSupervisor(
        config,
        settings,
        log_json=True if args.log_json else not sys.stderr.isatty(),
        log_level=30 if args.quiet else 20,
    )
    code = supervisor.run()
    if code == EXIT_BOOT_FAILED:
        sys.stderr.write(
            "pipeline run: a pipeline process could not start; its traceback is in the log "
            "(event pipeline.boot_failed)\n"
        )
    return code


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {text}")
    return value
