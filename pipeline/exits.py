"""How a child process ended, in words for a log line or a coverage error."""

from __future__ import annotations

import signal

__all__ = ["describe_exit"]


def describe_exit(code: int | None) -> str:
    """``killed by SIGKILL (out of memory?)``, ``exited with status 3``, …"""
    if code is None:
        return "ended"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"killed by {name}" + (" (out of memory?)" if -code == signal.SIGKILL else "")
    return f"exited with status {code}"
