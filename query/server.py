"""`query serve`: the long-running, read-only query process on a Unix socket.

::

    accept loop (main thread, 0.5 s ticks) ── per connection: a thread reading frames
         │  tick: CURRENT moved? → refresh + warm the hot index on the engine thread
         │        drain the engine's change feed (so the kernel's event queue stays short)
         │        socket file gone (index folder deleted)? → bind it again
         ▼
    engine thread (one): every request runs here, so the Engine never sees two at once;
    a request pins the generation current when it starts (``Engine.refresh``), and learns
    from the change feed which session files changed, so it stats only those

Limits: a request frame above ``max_request_bytes`` is refused (``request_too_large``) and the
connection closed; a request not answered within ``request_timeout`` gets ``request_timeout``
(the engine thread finishes it in the background; queued requests keep their own clocks); a
connection idle for ``idle_timeout`` is closed; past ``max_connections`` the oldest connection
not being answered is closed to make room, and only when every one is mid-request does a new
client get ``busy`` (and answer in-process). A client may ask for heartbeats (``"beat": s`` in
its request): ``{"beat": true}`` frames every *s* seconds while its request runs, so a server
that goes silent is known to be frozen within seconds, not at the request timeout.

The server writes nothing into the index folder except its own ``serve/`` folder (0700): the
socket (0600) and ``server.lock``, an flock held for its lifetime, so two servers never share
a socket. A socket file left by a dead server is replaced; a live one is refused
(``AlreadyServing``). SIGTERM / SIGINT (wired by the CLI) stop it cleanly and remove the
socket.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import errno
import fcntl
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from query.engine import Engine
from query.errors import InvalidArgument, QueryError
from query.transport import (
    MAX_REQUEST_BYTES,
    OPS,
    FrameError,
    config_fingerprint,
    lock_path,
    read_frame,
    run_local,
    serve_dir,
    socket_address,
    socket_path,
    write_frame,
)
from store.config import Config
from store.errors import IndexOutdated, SnapshotMissing, StoreError
from store.exits import EXIT_BUSY, EXIT_FAILED, EXIT_OK, EXIT_USAGE
from store.reader import read_current

__all__ = ["AlreadyServing", "QueryServer", "ServeOptions"]

log = logging.getLogger("sessiondex.query.serve")

_TICK = 0.5
# Sent while a request runs, when the client asks: silence then means a frozen server.
_BEAT: dict[str, Any] = {"beat": True}
_BEAT_MAX_S = 5.0


class AlreadyServing(QueryError):
    """Another query server owns this index's socket."""


@dataclass(frozen=True, slots=True)
class ServeOptions:
    request_timeout: float = 30.0
    max_request_bytes: int = MAX_REQUEST_BYTES
    idle_timeout: float = 300.0
    max_connections: int = 64
    warm: bool = True


def _error(code: str, message: str) -> dict[str, Any]:
    return {"ok": False, "error": {"code": code, "message": message}}


class QueryServer:
    """One index's query server (see the module docstring)."""

    def __init__(
        self, config: Config, options: ServeOptions | None = None, *, engine: Engine | None = None
    ) -> None:
        self.config = config
        self.options = options or ServeOptions()
        # long-lived: follow a change feed instead of stat-ing every session per request
        self.engine = engine or Engine(config, changes=True)
        self.fingerprint = config_fingerprint(config)
        self.path = socket_path(config.index_dir)
        self._listener: socket.socket | None = None
        self._inode: int | None = None
        self._lock_fd: int | None = None
        self._stop = threading.Event()
        self._stopped = threading.Event()
        self._worker = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="engine")
        # Open connections in the order they came (oldest first), and those mid-request.
        self._conns: dict[socket.socket, None] = {}
        self._answering: set[socket.socket] = set()
        self._conns_lock = threading.Lock()
        self._seen: int | None = None
        self._following: concurrent.futures.Future[None] | None = None
        self.requests = 0

    # -- life cycle -------------------------------------------------------------------------

    def start(self) -> None:
        """Take the lock and bind the socket. Raises AlreadyServing, OSError."""
        index = Path(self.config.index_dir)
        if not index.is_dir():  # started before the first index: the pipeline will fill it
            index.mkdir(mode=0o700, parents=True, exist_ok=True)
        folder = serve_dir(index)
        folder.mkdir(mode=0o700, exist_ok=True)
        os.chmod(folder, 0o700)
        self._take_lock()
        try:
            self._bind()
        except BaseException:
            self._release_lock()
            raise
        log.info("serving %s (pid %d)", self.path, os.getpid())

    def _take_lock(self) -> None:
        path = lock_path(self.config.index_dir)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                try:
                    owner = path.read_text().strip() or "?"
                except OSError:
                    owner = "?"
                raise AlreadyServing(
                    f"another query server (pid {owner}) is serving {self.path}"
                ) from None
            raise
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._lock_fd = fd

    def _release_lock(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def _bind(self) -> None:
        if self._answers():
            raise AlreadyServing(f"a query server is already answering on {self.path}")
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()  # a dead server's socket: nobody answers on it
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)
        try:
            with socket_address(self.path) as address:
                sock.bind(address)
        except BaseException:
            sock.close()
            raise
        finally:
            os.umask(old)
        os.chmod(self.path, 0o600)
        sock.listen(128)
        sock.settimeout(_TICK)
        self._listener = sock
        self._inode = os.stat(self.path).st_ino

    def _answers(self) -> bool:
        if not self.path.exists():
            return False
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        probe.settimeout(0.5)
        try:
            with socket_address(self.path) as address:
                probe.connect(address)
        except OSError:
            return False
        finally:
            probe.close()
        return True

    def shutdown(self) -> None:
        """Ask ``serve_forever`` to stop (safe from a signal handler or another thread)."""
        self._stop.set()

    def serve_forever(self) -> None:
        """Accept clients until ``shutdown``; then close everything and remove the socket."""
        if self._listener is None:
            self.start()
        # Load the current generation at once, not at the first tick: a client that comes
        # right after the socket appears (at login, beside a starting pipeline) would else
        # wait on the whole hot index (~120 ms for 50 hot sessions of 128 KB).
        self._tick()
        try:
            while not self._stop.is_set():
                assert self._listener is not None
                try:
                    conn, _ = self._listener.accept()
                except TimeoutError:
                    self._tick()
                    continue
                except OSError as exc:
                    if self._stop.is_set():
                        break
                    log.warning("accept failed: %s", exc)
                    time.sleep(_TICK)
                    continue
                self._admit(conn)
        finally:
            self._close()

    def _close(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.close()
        try:
            if self._inode is not None and os.stat(self.path).st_ino == self._inode:
                self.path.unlink()
        except OSError:
            pass
        with self._conns_lock:
            for conn in list(self._conns):
                with contextlib.suppress(OSError):
                    conn.shutdown(socket.SHUT_RDWR)
        self._worker.shutdown(wait=False, cancel_futures=True)
        self._release_lock()
        self.engine.close()
        self._stopped.set()
        log.info("stopped after %d requests", self.requests)

    def wait_stopped(self, timeout: float | None = None) -> bool:
        return self._stopped.wait(timeout)

    # -- housekeeping -----------------------------------------------------------------------

    def _tick(self) -> None:
        self._keep_socket()
        if self.engine.changes is not None and (self._following is None or self._following.done()):
            self._following = self._worker.submit(self.engine.follow)
        if not self.options.warm:
            return
        try:
            current = read_current(self.config.index_dir)
        except StoreError:
            return
        if current is not None and current != self._seen:
            self._seen = current
            self._worker.submit(self._warm)

    def _warm(self) -> None:
        """Load the new generation before a request needs it (requests refresh anyway)."""
        try:
            gen = self.engine.refresh()
            gen.hot("active")
            log.info("generation %d loaded", gen.generation)
        except Exception as exc:  # noqa: BLE001 - a failed warm-up only costs the next request
            log.warning("could not preload the current generation: %s", exc)

    def _keep_socket(self) -> None:
        """Bind again when the socket file vanished (the index folder was deleted)."""
        try:
            if os.stat(self.path).st_ino == self._inode:
                return
        except FileNotFoundError:
            if not Path(self.config.index_dir).is_dir():
                return  # deleted: wait for the pipeline to make it again, then bind
        except OSError:
            return
        log.warning("socket %s was removed or replaced; binding it again", self.path)
        old = self._listener
        self._listener = None
        if old is not None:
            old.close()
        self._release_lock()
        try:
            self.start()
        except (AlreadyServing, OSError) as exc:
            log.error("cannot serve %s any more: %s", self.path, exc)
            self._stop.set()

    # -- connections ------------------------------------------------------------------------

    def _admit(self, conn: socket.socket) -> None:
        with self._conns_lock:
            crowded = len(self._conns) >= self.options.max_connections
            if crowded:
                # A client that connected and went quiet (or stalled mid-frame) must not keep
                # new ones out for an idle timeout: the oldest connection not being answered
                # makes room. Its client reconnects on its next request.
                idle = next((c for c in self._conns if c not in self._answering), None)
                if idle is not None:
                    with contextlib.suppress(OSError):
                        idle.shutdown(socket.SHUT_RDWR)
                    del self._conns[idle]
                    crowded = False
            if not crowded:
                self._conns[conn] = None
        if crowded:
            try:
                conn.settimeout(1.0)
                write_frame(conn, _error("busy", "the query server is at its connection limit"))
            except OSError:
                pass
            conn.close()
            return
        threading.Thread(target=self._serve_connection, args=(conn,), daemon=True).start()

    def _serve_connection(self, conn: socket.socket) -> None:
        try:
            conn.settimeout(self.options.idle_timeout)
            while not self._stop.is_set():
                try:
                    frame = read_frame(conn, self.options.max_request_bytes)
                except FrameError as exc:
                    if exc.too_large:
                        write_frame(
                            conn,
                            _error(
                                "request_too_large",
                                f"request larger than {self.options.max_request_bytes} bytes",
                            ),
                        )
                    elif str(exc) != "connection closed":
                        write_frame(conn, _error("bad_request", str(exc)))
                    return
                with self._conns_lock:
                    self._answering.add(conn)
                try:
                    answer = self.answer(frame, beat=lambda: write_frame(conn, _BEAT))
                finally:
                    with self._conns_lock:
                        self._answering.discard(conn)
                write_frame(conn, answer)
        except OSError:
            return
        finally:
            with self._conns_lock:
                self._conns.pop(conn, None)
                self._answering.discard(conn)
            conn.close()

    # -- requests ---------------------------------------------------------------------------

    def answer(self, frame: Any, beat: Callable[[], None] | None = None) -> dict[str, Any]:
        """The response frame for one request frame; while it runs, *beat* is called every
        ``frame["beat"]`` seconds when the client asked for heartbeats."""
        if self._stop.is_set():
            return _error("shutting_down", "the query server is stopping")
        if not isinstance(frame, dict) or frame.get("op") not in OPS:
            return _error("bad_request", f"a request is {{op, args, cwd}} with op in {OPS}")
        op: str = frame["op"]
        args = frame.get("args", {})
        cwd = frame.get("cwd")
        if not isinstance(args, Mapping) or not isinstance(cwd, str) or not cwd.startswith("/"):
            return _error("bad_request", "args must be an object and cwd an absolute path")
        if frame.get("config", self.fingerprint) != self.fingerprint:
            return _error(
                "config_mismatch",
                "the query server runs with another configuration; answering in-process",
            )
        if op == "ping":
            return {"ok": True, "result": self._status()}
        self.requests += 1
        try:
            future = self._worker.submit(run_local, self.engine, op, args, cwd)
        except RuntimeError:  # the worker was shut down
            return _error("shutting_down", "the query server is stopping")
        interval = frame.get("beat")
        if not (isinstance(interval, int | float) and 0 < interval <= _BEAT_MAX_S):
            interval, beat = self.options.request_timeout, None
        deadline = time.monotonic() + self.options.request_timeout
        try:
            while True:
                left = deadline - time.monotonic()
                try:
                    return {"ok": True, "result": future.result(max(0.0, min(interval, left)))}
                except concurrent.futures.TimeoutError:
                    if left <= interval or beat is None:
                        raise
                    beat()
        except concurrent.futures.TimeoutError:
            future.cancel()
            return _error(
                "request_timeout",
                f"the request did not finish within {self.options.request_timeout:g} s",
            )
        except concurrent.futures.CancelledError:
            return _error("shutting_down", "the query server is stopping")
        except InvalidArgument as exc:
            return _error("invalid_argument", str(exc))
        except SnapshotMissing as exc:
            return _error("no_index", str(exc))
        except IndexOutdated as exc:
            return _error(exc.code, str(exc))
        except StoreError as exc:
            return _error("store_error", str(exc))
        except Exception as exc:  # noqa: BLE001 - a bug must not take the server down
            log.exception("request %s failed", op)
            return _error("internal_error", f"{type(exc).__name__}: {exc}")

    def _status(self) -> dict[str, Any]:
        try:
            generation = read_current(self.config.index_dir)
        except StoreError:
            generation = None
        return {
            "pid": os.getpid(),
            "socket": str(self.path),
            "generation": generation,
            "requests": self.requests,
        }


# -------------------------------------------------------------------------------------- CLI


def run_serve(ns: Any) -> int:
    import signal
    import sys

    from query.collector import configure_for_long_life
    from store.config import ConfigError, load_config

    configure_for_long_life()
    logging.basicConfig(
        level=logging.WARNING if ns.quiet else logging.INFO,
        format="%(asctime)s query serve: %(message)s",
        stream=sys.stderr,
    )
    try:
        config = load_config(ns.config)
        if ns.request_timeout <= 0 or ns.idle_timeout <= 0 or ns.max_connections < 1:
            raise ConfigError("timeouts must be positive and --max-connections at least 1")
        if ns.max_request_bytes < 1024:
            raise ConfigError("--max-request-bytes must be at least 1024")
    except ConfigError as exc:
        sys.stderr.write(f"query: {exc}\n")
        return EXIT_USAGE
    server = QueryServer(
        config,
        ServeOptions(
            request_timeout=ns.request_timeout,
            max_request_bytes=ns.max_request_bytes,
            idle_timeout=ns.idle_timeout,
            max_connections=ns.max_connections,
        ),
    )
    try:
        server.start()
    except AlreadyServing as exc:
        sys.stderr.write(f"query: {exc}\n")
        return EXIT_BUSY
    except OSError as exc:
        sys.stderr.write(f"query: cannot serve {server.path}: {exc}\n")
        return EXIT_FAILED
    http = None
    if getattr(ns, "http", None) is not None:
        from query.ui.run import start_beside

        try:
            http = start_beside(server, ns.http)
        except (OSError, ValueError) as exc:
            sys.stderr.write(f"query: cannot serve the web UI on port {ns.http}: {exc}\n")
            server.shutdown()
            server.serve_forever()  # releases the socket and the lock
            return EXIT_FAILED
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: server.shutdown())
    try:
        server.serve_forever()
    finally:
        if http is not None:
            http.stop()
    return EXIT_OK
