"""The exit codes of both commands, defined once so that `pipeline` and `query` agree.

Both sides may import store, so the one table lives here; ``ops/runbook.md`` §4 and the README
describe it, and the service units' ``RestartPreventExitStatus`` lists the codes that a restart
cannot fix.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Final

from store.errors import IndexOutdated, NotAnIndex, SnapshotMissing, StoreError, StoreLocked

__all__ = [
    "EXIT_ANSWERED_ERROR",
    "EXIT_BOOT_FAILED",
    "EXIT_BUSY",
    "EXIT_CLOSED_PIPE",
    "EXIT_FAILED",
    "EXIT_NOT_AN_INDEX",
    "EXIT_NO_INDEX",
    "EXIT_OK",
    "EXIT_USAGE",
    "MEANINGS",
    "exit_for_store_error",
    "quiet_on_closed_pipe",
]

EXIT_OK: Final = 0
# Something failed inside sessiondex: a session could not be indexed (named in the log and in
# `pipeline status`), a record cannot be decoded, or `query serve` failed or timed out.
EXIT_FAILED: Final = 1
EXIT_USAGE: Final = 2  # bad arguments or configuration
# Another process owns what this one needs: the index's writer lock (`pipeline`), or the
# query socket (`query serve`).
EXIT_BUSY: Final = 3
# nothing published yet (or only a generation another format wrote, being derived again):
# run `pipeline run --once`
EXIT_NO_INDEX: Final = 4
EXIT_BOOT_FAILED: Final = 5  # a `pipeline run` process could not start at all
# `query`: the request was understood and answered with an `error` body (stale pointer,
# unknown or ambiguous session, missing address…).
EXIT_ANSWERED_ERROR: Final = 6
# `indexDir` holds files that are not a sessiondex index; nothing in it was touched.
EXIT_NOT_AN_INDEX: Final = 7
# stdout was closed by its reader (`| head`): as a command killed by SIGPIPE, silently.
EXIT_CLOSED_PIPE: Final = 141

MEANINGS: Final[dict[int, str]] = {
    EXIT_OK: "done / answered",
    EXIT_FAILED: "something failed inside sessiondex (see the message and the log)",
    EXIT_USAGE: "bad arguments or configuration",
    EXIT_BUSY: "another process holds the index lock or the query socket",
    EXIT_NO_INDEX: "no (readable) index yet: run `pipeline run --once`",
    EXIT_BOOT_FAILED: "a pipeline process could not start (traceback in the log)",
    EXIT_ANSWERED_ERROR: "answered with an error (stale pointer, unknown session…)",
    EXIT_NOT_AN_INDEX: "indexDir is not a sessiondex index (nothing was deleted)",
    EXIT_CLOSED_PIPE: "the reader of stdout went away (`| head`); ended quietly",
}


def exit_for_store_error(exc: StoreError) -> int:
    """Only a missing generation is "no index yet"; a damaged index is a failure."""
    if isinstance(exc, StoreLocked):
        return EXIT_BUSY
    if isinstance(exc, SnapshotMissing | IndexOutdated):
        return EXIT_NO_INDEX
    if isinstance(exc, NotAnIndex):
        return EXIT_NOT_AN_INDEX
    return EXIT_FAILED


def quiet_on_closed_pipe(main: Callable[[], int]) -> int:
    """Run a command's *main*; a reader that went away (``| head -1``) ends it quietly.

    Python's own answer to a closed stdout is a ``BrokenPipeError`` traceback, and another one
    when the interpreter flushes stdout at exit; point stdout at /dev/null so that flush is
    silent, and exit as a command killed by SIGPIPE would (128 + 13).
    """
    try:
        code = main()
        sys.stdout.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return EXIT_CLOSED_PIPE
    return code
