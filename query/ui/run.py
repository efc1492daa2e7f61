"""Starting the web UI: check the address, bind it ourselves, hand the socket to uvicorn.

The socket is bound here, not by uvicorn, so that what listens is exactly the loopback
address and port asked for (``--port 0`` then reports the port the kernel chose), and an
address that is not loopback is refused before anything listens.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import secrets
import signal
import socket
import sys
import threading
from typing import TYPE_CHECKING, Any

from query.errors import QueryError
from query.ui.answer import Answerer, LocalAnswerer, ServerAnswerer
from query.ui.app import UiSettings, build_app
from store.exits import EXIT_FAILED, EXIT_OK, EXIT_USAGE

if TYPE_CHECKING:
    import uvicorn

    from query.server import QueryServer

__all__ = ["NotLoopback", "UiServer", "bind_loopback", "loopback", "run_ui", "start_beside"]

log = logging.getLogger("sessiondex.query.ui")


class NotLoopback(QueryError):
    """The web UI was asked to listen on an address other users or machines can reach."""


def loopback(host: str) -> str:
    """*host* as an IP literal when it is a loopback address; NotLoopback otherwise.

    ``localhost`` means 127.0.0.1 (not whatever a resolver says). Names are not resolved:
    only the address given is ever bound.
    """
    text = "127.0.0.1" if host == "localhost" else host.strip("[]")
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        raise NotLoopback(
            f"--host {host!r} is not an IP address; the web UI listens on 127.0.0.1 (or ::1)"
        ) from None
    if not address.is_loopback:
        raise NotLoopback(
            f"refusing to listen on {host}: the web UI serves your session history and binds "
            "a loopback address only (127.0.0.1 or ::1)"
        )
    return str(address)


def bind_loopback(host: str, port: int) -> socket.socket:
    """A listening TCP socket on exactly (*host*, *port*); NotLoopback, ValueError, OSError."""
    address = loopback(host)
    if not 0 <= port <= 65535:
        raise ValueError(f"--port {port} is not a TCP port (0..65535)")
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    # proto named: asyncio sets TCP_NODELAY only on sockets whose proto says TCP, and without
    # it every answer on a kept-alive connection waits ~40 ms (Nagle vs delayed ACK).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((address, port))
        sock.listen(128)
    except BaseException:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


class UiServer:
    """One web UI: a bound socket, its token, and the uvicorn server that answers on it."""

    def __init__(self, answer: Answerer, sock: socket.socket, *, cwd: str, index_dir: str) -> None:
        import uvicorn

        self.answer = answer
        self.sock = sock
        self.host, self.port = sock.getsockname()[:2]
        self.token = secrets.token_urlsafe(24)
        self.settings = UiSettings(
            token=self.token, host=self.host, port=self.port, cwd=cwd, index_dir=index_dir
        )
        config = uvicorn.Config(
            build_app(answer, self.settings),
            log_level="warning",
            access_log=False,
            lifespan="off",
            timeout_graceful_shutdown=1,
            server_header=False,
        )
        self.server: uvicorn.Server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        shown = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{shown}:{self.port}/?token={self.token}"

    def run(self) -> None:
        """Serve until ``stop`` (or SIGINT/SIGTERM when called on the main thread)."""
        try:
            self.server.run(sockets=[self.sock])
        finally:
            self.sock.close()

    def start(self) -> None:
        """Serve from a thread (beside `query serve`'s accept loop)."""
        self._thread = threading.Thread(target=self.run, name="http", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self.server.should_exit = True
        if self._thread is not None:
            self._thread.join(5)


def _announce(ui: UiServer) -> None:
    sys.stdout.write(f"sessiondex UI: {ui.url}\n")
    sys.stdout.flush()


def start_beside(server: QueryServer, port: int) -> UiServer:
    """`query serve --http PORT`: the web UI on the socket server's engine thread."""
    ui = UiServer(
        ServerAnswerer(server),
        bind_loopback("127.0.0.1", port),
        cwd=os.getcwd(),
        index_dir=str(server.config.index_dir),
    )
    ui.start()
    _announce(ui)
    return ui


def run_ui(ns: Any) -> int:
    from query.collector import configure_for_long_life
    from store.config import ConfigError, load_config

    try:
        config = load_config(ns.config)
        sock = bind_loopback(ns.host, ns.port)
    except (ConfigError, NotLoopback, ValueError) as exc:
        sys.stderr.write(f"query: {exc}\n")
        return EXIT_USAGE
    except OSError as exc:
        sys.stderr.write(f"query: cannot listen on {ns.host}:{ns.port}: {exc}\n")
        return EXIT_FAILED
    configure_for_long_life()
    logging.basicConfig(
        level=logging.WARNING, format="%(asctime)s query ui: %(message)s", stream=sys.stderr
    )
    cwd = os.path.abspath(ns.cwd) if ns.cwd else os.getcwd()
    answer = LocalAnswerer(config, server=not ns.no_server)
    ui = UiServer(answer, sock, cwd=cwd, index_dir=str(config.index_dir))
    threading.Thread(target=answer.warm, name="warm", daemon=True).start()

    # uvicorn turns SIGINT / SIGTERM into a clean stop, then raises the signal again with the
    # handler it found: ours ends the run instead of the default killing the process, so a
    # service manager sees exit 0. (Before uvicorn runs, the same handler stops it at start.)
    def stop(signum: int, frame: object) -> None:
        ui.server.should_exit = True

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, stop)
    _announce(ui)
    try:
        ui.run()
    finally:
        answer.close()
    return EXIT_OK
