"""Who answers the web UI's requests: one callable, ``(op, args, cwd) -> frame``.

A frame is the query socket's answer (``query.transport``): ``{"ok": true, "result": {...}}``
or ``{"ok": false, "error": {"code", "message"}}``, so the HTTP layer treats the in-process
path and `query serve --http` alike.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from query.errors import InvalidArgument, QueryError
from query.transport import Backend, RequestTimeout, ServerError, ServerUnavailable, run_local
from store.config import Config
from store.errors import IndexOutdated, SnapshotMissing, StoreError

if TYPE_CHECKING:
    from query.engine import Engine
    from query.server import QueryServer

__all__ = ["Answerer", "LocalAnswerer", "ServerAnswerer", "failure"]


class Answerer(Protocol):
    def __call__(self, op: str, args: Mapping[str, Any], cwd: str) -> dict[str, Any]: ...

    @property
    def served_by(self) -> str | None: ...

    def close(self) -> None: ...


def failure(code: str, message: str) -> dict[str, Any]:
    return {"ok": False, "error": {"code": code, "message": message}}


class LocalAnswerer:
    """`query ui`: a running `query serve` first (``server=True``), else one long-lived
    in-process Engine that follows a change feed. Requests are serialized (an Engine never
    sees two at once)."""

    def __init__(self, config: Config, *, server: bool = True) -> None:
        self.config = config
        self._backend = Backend(config, server="require") if server else None
        self._engine: Engine | None = None
        self._lock = threading.Lock()
        self.served_by: str | None = None

    def _local(self) -> Engine:
        if self._engine is None:
            from query.engine import Engine

            self._engine = Engine(self.config, changes=True)
        return self._engine

    def __call__(self, op: str, args: Mapping[str, Any], cwd: str) -> dict[str, Any]:
        with self._lock:
            try:
                return {"ok": True, "result": self._answer(op, args, cwd)}
            except InvalidArgument as exc:
                return failure("invalid_argument", str(exc))
            except SnapshotMissing as exc:
                return failure("no_index", str(exc))
            except IndexOutdated as exc:
                return failure(exc.code, str(exc))
            except RequestTimeout as exc:
                return failure("request_timeout", str(exc))
            except ServerError as exc:
                return failure(exc.code, str(exc))
            except (StoreError, QueryError) as exc:
                return failure("store_error", str(exc))

    def _answer(self, op: str, args: Mapping[str, Any], cwd: str) -> dict[str, Any]:
        if self._backend is not None:
            try:
                result: dict[str, Any] = getattr(self._backend, op)(args, cwd=cwd)
            except ServerUnavailable:
                pass
            else:
                self.served_by = "server"
                return result
        self.served_by = "in-process"
        return run_local(self._local(), op, args, cwd)

    def warm(self) -> None:
        """Load the current generation before the first request needs it (when no server
        answers); a failure only costs that request, which reports it."""
        with self._lock:
            if self._backend is not None and self._backend.ping() is not None:
                return
            with contextlib.suppress(StoreError, QueryError, OSError):
                self._local().refresh().hot("active")

    def close(self) -> None:
        with self._lock:
            if self._backend is not None:
                self._backend.close()
            if self._engine is not None:
                self._engine.close()
                self._engine = None


class ServerAnswerer:
    """`query serve --http`: every request goes through that server's engine thread, with
    its limits (request timeout, shutdown) and its error codes."""

    served_by = "server"

    def __init__(self, server: QueryServer) -> None:
        self._server = server

    def __call__(self, op: str, args: Mapping[str, Any], cwd: str) -> dict[str, Any]:
        answer: dict[str, Any] = self._server.answer({"op": op, "args": dict(args), "cwd": cwd})
        return answer

    def close(self) -> None:
        """The socket server owns the engine and closes it."""
