"""Long-lived measured processes the bench talks to over JSON lines."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Sequence
from typing import Any

import orjson

from devtools import ROOT
from devtools.bench.procs import rss_kb, tree_rss_kb

__all__ = ["Worker"]


class Worker:
    def __init__(self, argv: Sequence[str]) -> None:
        # in the checkout's root, where ``python -m devtools.…`` finds its package
        self.proc = subprocess.Popen(
            list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=ROOT
        )

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(orjson.dumps(request) + b"\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"worker {self.proc.args!r} exited ({self.proc.wait()})")
        reply: dict[str, Any] = orjson.loads(line)
        return reply

    def rss(self) -> dict[str, int]:
        return {"rss_kb": tree_rss_kb(self.proc.pid), "hwm_kb": rss_kb(self.proc.pid, "VmHWM")}

    def close(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(RuntimeError, BrokenPipeError):
                self.ask({"op": "quit"})
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
