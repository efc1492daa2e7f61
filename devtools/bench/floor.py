"""The socket floor: what one request/response between two Python processes costs with no work.

Our recall latency is measured through ``query serve`` (a client process, a Unix socket, the
server process); FTS5's in its own process. Beside them the bench measures the same framing
(``query.transport.write_frame`` / ``read_frame``, the request our client sends) against an
echo process on a socket pair: no server logic, no engine. A p95 limit below this floor
cannot be met by any answer that crosses a process boundary on this machine.

    python -m devtools.bench.floor echo FD      the echo side (the bench starts it)
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from typing import Any

from devtools import ROOT
from devtools.bench.procs import percentiles

__all__ = ["socket_floor"]

_LIMIT = 1 << 20
# What ``Backend.recall`` sends for a one-term recall (the reply is the same frame back).
_REQUEST: dict[str, Any] = {
    "op": "recall",
    "args": {"query": "qj4oh8ckgmms", "pageSize": 10},
    "cwd": "/",
    "config": "0" * 64,
}


def socket_floor(count: int = 2000, warmup: int = 200) -> dict[str, Any]:
    """p50 / p95 / p99 in ms of *count* framed round trips to an echo process."""
    from query.transport import read_frame, write_frame

    mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    child = subprocess.Popen(
        [sys.executable, "-m", "devtools.bench.floor", "echo", str(theirs.fileno())],
        pass_fds=(theirs.fileno(),),
        cwd=ROOT,
    )
    theirs.close()
    spent: list[float] = []
    try:
        for i in range(warmup + count):
            started = time.perf_counter()
            write_frame(mine, _REQUEST)
            read_frame(mine, _LIMIT)
            if i >= warmup:
                spent.append((time.perf_counter() - started) * 1000)
    finally:
        mine.close()
        child.wait(timeout=10)
    return percentiles(spent)


def _echo(fd: int) -> None:
    from query.transport import FrameError, read_frame, write_frame

    sock = socket.socket(fileno=fd)
    while True:
        try:
            frame = read_frame(sock, _LIMIT)
        except (FrameError, OSError):
            return
        write_frame(sock, frame)


if __name__ == "__main__":
    if sys.argv[1:2] == ["echo"]:
        _echo(int(sys.argv[2]))
