"""``--since`` / ``--until`` values: epoch ms, ISO dates and times, or ``7d``-style ages.

::

    1700000000000            epoch milliseconds
    2026-01-15               a local calendar day (start of it; for --until, its end)
    2026-01-15T09:30         local time;  2026-01-15T09:30:00Z / +02:00  that instant
    90s  30m  12h  7d  2w    that long before now
"""

from __future__ import annotations

import re
import time
from datetime import datetime, timedelta
from typing import Final

__all__ = ["TimeSpecError", "parse_time"]

_AGE: Final = re.compile(r"^(\d+)\s*(s|m|h|d|w)$")
_UNIT_MS: Final = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000}
_DATE_ONLY: Final = re.compile(r"^\d{4}-\d{2}-\d{2}$")


class TimeSpecError(ValueError):
    pass


def parse_time(text: str, *, end_of_day: bool = False, now_ms: int | None = None) -> int:
    """Epoch milliseconds for *text* (see the module docstring)."""
    value = text.strip()
    if re.fullmatch(r"-?\d+", value):
        return int(value)
    age = _AGE.match(value.lower())
    if age:
        now = int(time.time() * 1000) if now_ms is None else now_ms
        return now - int(age.group(1)) * _UNIT_MS[age.group(2)]
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise TimeSpecError(
            f"cannot read {text!r} as a time: use epoch ms, an ISO date/time "
            "(2026-01-15, 2026-01-15T09:30, …Z) or an age like 7d, 12h, 30m"
        ) from None
    if end_of_day and _DATE_ONLY.match(value):
        moment = moment + timedelta(days=1) - timedelta(milliseconds=1)
    if moment.tzinfo is None:
        moment = moment.astimezone()  # a naive time is the caller's local time
    return int(moment.timestamp() * 1000)
