"""The query socket: where it lives, how a request travels, and the server-first backend.

::

    <index>/serve/             0700   made by `query serve`: the read side's only write
    <index>/serve/query.sock   0600   the Unix socket
    <index>/serve/server.lock         flock held while a server runs (holds its pid)

A frame is a 4-byte big-endian length and one JSON document. A request is
``{"op", "args", "cwd", "config"}``; the answer is ``{"ok": true, "result": {...}}`` or
``{"ok": false, "error": {"code", "message"}}``. ``config`` is a fingerprint of the caller's
configuration: a server started with another configuration declines, and the caller answers
in-process instead, so a result never depends on which side computed it.

``Backend`` is what the CLI, the MCP server and ``query.client`` hold: each call goes to the
server when one answers on the socket and runs in-process (read-only) when none does. Errors
come back as the exceptions in-process code raises (``InvalidArgument``, ``SnapshotMissing``,
``StoreError``), so callers handle both paths with one ``except``.
"""

from __future__ import annotations

import contextlib
import os
import socket
import struct
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

import blake3

from query.errors import InvalidArgument, QueryError
from store import jsonio
from store.config import Config
from store.errors import (
    INDEX_OUTDATED,
    INDEX_UPGRADING,
    IndexOutdated,
    SnapshotMissing,
    StoreError,
)

if TYPE_CHECKING:
    from query.engine import Engine

__all__ = [
    "MAX_REQUEST_BYTES",
    "OPS",
    "Backend",
    "FrameError",
    "RequestTimeout",
    "ServerError",
    "ServerMode",
    "ServerUnavailable",
    "config_fingerprint",
    "lock_path",
    "read_frame",
    "serve_dir",
    "socket_address",
    "socket_path",
    "write_frame",
]

SERVE_DIR: Final = "serve"
SOCKET_NAME: Final = "query.sock"
LOCK_NAME: Final = "server.lock"
MAX_REQUEST_BYTES: Final = 1 << 20
MAX_RESPONSE_BYTES: Final = 64 << 20
OPS: Final = ("recall", "expand", "sessions", "call", "catalog", "ping")
# sun_path is 108 bytes on Linux and 104 on macOS, NUL included.
_SUN_PATH_MAX: Final = 100
_HEADER: Final = struct.Struct(">I")
# Heartbeats a client asks for while its request runs, and how long it waits in silence
# before it takes the server for frozen (generous: a loaded machine delays a thread).
BEAT_S: Final = 0.25
LIVENESS_S: Final = 3.0
_BEAT: Final = {"beat": True}

ServerMode = Literal["auto", "off", "require"]


class ServerUnavailable(QueryError):
    """No query server answered (or it declined); in-process reading is the fallback."""


class ServerError(QueryError):
    """The query server failed on a request; ``code`` is its error code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class RequestTimeout(ServerError):
    """The request did not finish within the server's per-request timeout."""


class FrameError(Exception):
    """A frame could not be read: the peer closed, sent garbage or exceeded the size limit."""

    def __init__(self, message: str, *, too_large: bool = False) -> None:
        super().__init__(message)
        self.too_large = too_large


# ------------------------------------------------------------------------------------ paths


def serve_dir(index_dir: Path) -> Path:
    return Path(index_dir) / SERVE_DIR


def socket_path(index_dir: Path) -> Path:
    return serve_dir(index_dir) / SOCKET_NAME


def lock_path(index_dir: Path) -> Path:
    return serve_dir(index_dir) / LOCK_NAME


@contextlib.contextmanager
def socket_address(path: Path) -> Iterator[str]:
    """An address ``bind``/``connect`` accept for *path*, however long the index path is.

    A path past the ``sun_path`` limit is reached through its open folder
    (``/proc/self/fd/N/query.sock``) on Linux; elsewhere it is an error naming the limit.
    """
    text = os.fspath(path)
    if len(os.fsencode(text)) < _SUN_PATH_MAX:
        yield text
        return
    if not sys.platform.startswith("linux"):
        raise OSError(
            f"socket path {text} is longer than {_SUN_PATH_MAX} bytes; "
            "use a shorter memory.indexDir"
        )
    fd = os.open(path.parent, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        yield f"/proc/self/fd/{fd}/{path.name}"
    finally:
        os.close(fd)


def config_fingerprint(config: Config) -> str:
    """Every setting that can change an answer (roots, index folder, [memory] keys)."""
    return blake3.blake3(config.to_toml().encode("utf-8")).hexdigest()[:32]


# ----------------------------------------------------------------------------------- frames


def encode(obj: Any) -> bytes:
    return jsonio.dumps(obj)


def decode(data: bytes) -> Any:
    try:
        return jsonio.loads(data)
    except ValueError as exc:
        raise FrameError(f"frame is not JSON: {exc}") from None


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    chunks: list[bytes] = []
    while n:
        chunk = sock.recv(min(n, 1 << 20))
        if not chunk:
            raise FrameError("connection closed")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def read_frame(sock: socket.socket, limit: int) -> Any:
    """One JSON document; FrameError on EOF, garbage, or a length above *limit*."""
    (length,) = _HEADER.unpack(_recv_exact(sock, _HEADER.size))
    if length > limit:
        raise FrameError(f"frame of {length} bytes exceeds the {limit}-byte limit", too_large=True)
    return decode(_recv_exact(sock, length))


def write_frame(sock: socket.socket, obj: Any) -> None:
    data = encode(obj)
    sock.sendall(_HEADER.pack(len(data)) + data)


# ---------------------------------------------------------------------------------- backend


class _Silent(Exception):
    """The server sent nothing, not even a heartbeat, for the liveness window: it is frozen."""


class _Connection:
    """One client connection to a running server (requests are answered in order)."""

    def __init__(self, path: Path, connect_timeout: float, liveness: float) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self.sock.settimeout(connect_timeout)
            with socket_address(path) as address:
                self.sock.connect(address)
            # A live server answers or beats well within this; silence means it is stopped.
            self.sock.settimeout(liveness)
        except BaseException:
            self.sock.close()
            raise

    def request(self, frame: Mapping[str, Any], deadline: float) -> Any:
        """The answer to *frame*, skipping heartbeats. Raises TimeoutError past *deadline*
        (monotonic) and ``_Silent`` when the server goes quiet."""
        write_frame(self.sock, {**frame, "beat": BEAT_S})
        while True:
            try:
                answer = read_frame(self.sock, MAX_RESPONSE_BYTES)
            except TimeoutError:
                raise _Silent from None
            if answer != _BEAT:
                return answer
            if time.monotonic() > deadline:
                raise TimeoutError

    def close(self) -> None:
        self.sock.close()


class Backend:
    """Answers recall / expand / sessions / catalog / call: server first, in-process otherwise.

    ``server``: ``"auto"`` (the default) uses a running ``query serve`` and falls back to
    in-process reading; ``"off"`` never connects; ``"require"`` raises ServerUnavailable
    instead of falling back. ``served_by`` says where the last call was answered. Safe to
    share between threads (calls are serialized).
    """

    def __init__(
        self,
        config: Config,
        *,
        server: ServerMode = "auto",
        connect_timeout: float = 0.5,
        read_timeout: float = 120.0,
        liveness: float = LIVENESS_S,
    ) -> None:
        self.config = config
        self.mode: ServerMode = server
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self.liveness = liveness
        self.fingerprint = config_fingerprint(config)
        self.served_by: Literal["server", "in-process"] | None = None
        self._conn: _Connection | None = None
        self._engine: Engine | None = None
        self._lock = threading.RLock()

    @property
    def socket(self) -> Path:
        return socket_path(self.config.index_dir)

    @property
    def engine(self) -> Engine:
        """The in-process engine (created on first use)."""
        with self._lock:
            if self._engine is None:
                # Imported here: a client answered by the server never loads the engine.
                from query.engine import Engine

                self._engine = Engine(self.config)
            return self._engine

    # -- actions ----------------------------------------------------------------------------

    def recall(self, args: Mapping[str, Any], *, cwd: str | None = None) -> dict[str, Any]:
        return self._dispatch("recall", args, cwd)

    def expand(self, args: Mapping[str, Any], *, cwd: str | None = None) -> dict[str, Any]:
        return self._dispatch("expand", args, cwd)

    def sessions(self, args: Mapping[str, Any], *, cwd: str | None = None) -> dict[str, Any]:
        return self._dispatch("sessions", args, cwd)

    def catalog(self, args: Mapping[str, Any], *, cwd: str | None = None) -> dict[str, Any]:
        return self._dispatch("catalog", args, cwd)

    def call(self, token: Mapping[str, Any], *, cwd: str | None = None) -> dict[str, Any]:
        """Execute a ``{ref, args}`` call token (a ``follow`` or ``next``) verbatim."""
        return self._dispatch("call", token, cwd)

    # -- dispatch ---------------------------------------------------------------------------

    def _dispatch(self, op: str, args: Mapping[str, Any], cwd: str | None) -> dict[str, Any]:
        if not isinstance(args, Mapping):
            raise InvalidArgument(f"{op} arguments must be a JSON object")
        where = cwd or os.getcwd()
        with self._lock:
            if self.mode != "off":
                try:
                    result = self._remote(op, args, where)
                except ServerUnavailable:
                    if self.mode == "require":
                        raise
                else:
                    self.served_by = "server"
                    return result
            self.served_by = "in-process"
            return run_local(self.engine, op, args, where)

    def _connect(self) -> _Connection:
        path = self.socket
        if not os.path.exists(path):
            raise ServerUnavailable(f"no query server socket at {path}")
        try:
            return _Connection(path, self.connect_timeout, self.liveness)
        except OSError as exc:
            raise ServerUnavailable(f"cannot connect to {path}: {exc}") from None

    def _remote(self, op: str, args: Mapping[str, Any], cwd: str) -> dict[str, Any]:
        frame = {"op": op, "args": args, "cwd": cwd, "config": self.fingerprint}
        for attempt in (0, 1):
            fresh = self._conn is None
            if self._conn is None:
                self._conn = self._connect()
            try:
                answer = self._conn.request(frame, time.monotonic() + self.read_timeout)
            except _Silent:
                self._drop()
                raise ServerUnavailable(
                    f"the query server sent nothing for {self.liveness:g} s (stopped or "
                    "frozen): answering in-process"
                ) from None
            except TimeoutError:
                self._drop()
                raise RequestTimeout(
                    "request_timeout",
                    f"the query server did not answer within {self.read_timeout:g} s",
                ) from None
            except (OSError, FrameError) as exc:
                # A kept connection may have been closed by the server (idle timeout,
                # restart): reconnect once. Requests are read-only, so a retry is safe.
                self._drop()
                if fresh or attempt:
                    raise ServerUnavailable(f"query server connection failed: {exc}") from None
                continue
            return self._unwrap(answer)
        raise ServerUnavailable("query server connection failed")  # pragma: no cover

    def _unwrap(self, answer: Any) -> dict[str, Any]:
        if not isinstance(answer, dict):
            self._drop()
            raise ServerUnavailable("query server sent a malformed answer")
        if answer.get("ok") is True and isinstance(answer.get("result"), dict):
            result: dict[str, Any] = answer["result"]
            return result
        raw = answer.get("error")
        error: dict[str, Any] = raw if isinstance(raw, dict) else {}
        code = str(error.get("code", "internal_error"))
        message = str(error.get("message", "the query server failed"))
        if code == "invalid_argument":
            raise InvalidArgument(message)
        if code == "request_too_large":
            raise InvalidArgument(message)
        if code == "no_index":
            raise SnapshotMissing(self.config.index_dir)
        if code in (INDEX_UPGRADING, INDEX_OUTDATED):
            raise IndexOutdated(
                self.config.index_dir, "", upgrading=code == INDEX_UPGRADING, message=message
            )
        if code == "store_error":
            raise StoreError(message)
        if code == "request_timeout":
            raise RequestTimeout(code, message)
        if code in ("config_mismatch", "busy", "shutting_down", "bad_request"):
            self._drop()
            raise ServerUnavailable(message)
        raise ServerError(code, message)

    def _drop(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def ping(self) -> dict[str, Any] | None:
        """The server's status (pid, generation), or None when no server answers."""
        with self._lock:
            try:
                return self._remote("ping", {}, os.getcwd())
            except (ServerUnavailable, ServerError):
                return None

    def close(self) -> None:
        with self._lock:
            self._drop()
            if self._engine is not None:
                self._engine.close()
                self._engine = None

    def __enter__(self) -> Backend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def run_local(engine: Engine, op: str, args: Mapping[str, Any], cwd: str) -> dict[str, Any]:
    """One operation on an in-process engine (the server runs exactly this)."""
    if op == "recall":
        return engine.recall(args, cwd=cwd)
    if op == "expand":
        return engine.expand(args, cwd=cwd)
    if op == "sessions":
        return engine.sessions(args, cwd=cwd)
    if op == "catalog":
        from query.catalog import catalog_for

        return catalog_for(engine, args, cwd=cwd)
    if op == "call":
        return engine.call(args, cwd=cwd)
    raise InvalidArgument(f"unknown operation {op!r}; expected one of {', '.join(OPS[:-1])}")
