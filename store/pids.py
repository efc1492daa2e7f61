"""Whether a process another run recorded (a supervisor, an upgrading pipeline) still lives."""

from __future__ import annotations

import os

__all__ = ["alive"]


def alive(pid: object) -> bool:
    """True while *pid* names a running process (one of another user counts: it exists)."""
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
