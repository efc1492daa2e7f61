"""`query serve`: the socket, identical CLI output either way, limits, generations, signals."""

from __future__ import annotations

import os
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pipeline.catchup import catch_up
from query.cli import main
from query.engine import Engine
from query.server import QueryServer, ServeOptions
from query.transport import Backend, RequestTimeout, read_frame, socket_path, write_frame
from store.config import Config
from tests.helpers import assistant, header, tool_result, user
from tests.unit.query.kit import CWD, T0, Kit

pytestmark = pytest.mark.integration

LONG = "word " * 3000


def corpus(kit: Kit) -> Path:
    kit.configure(hotSessions=1)
    path = kit.session(
        "main",
        [
            header("main", CWD),
            user("u", None, "where is the flaky timeout test", T0),
            assistant("a", "u", LONG, T0 + 1, {"id": "c", "name": "bash", "arguments": {}}),
            tool_result("r", "a", "bash", "timeout after 30s", T0 + 2, error=True),
        ],
        mtime_s=2000,
    )
    kit.session(
        "older",
        [header("older", CWD), user("u", None, "an older timeout note", T0)],
        mtime_s=1000,
    )
    kit.build()
    return path


# Bounds on waiting for a process or a condition, not measurements: generous, so a machine
# loaded by other builds (interpreters starting in seconds, not milliseconds) still passes.
PATIENCE_S = 300.0


def wait_for(predicate: Any, timeout: float = PATIENCE_S) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("condition not reached in time")


def ping(config: Config) -> dict[str, Any] | None:
    with Backend(config, server="require") as b:
        return b.ping()


class Served:
    """A `query serve` subprocess on a kit's config."""

    def __init__(self, config_path: Path, *extra: str) -> None:
        self.stderr = ""
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "query", "serve", "--config", str(config_path), *extra],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )

    def stop(self) -> int:
        """SIGTERM it and wait; what it wrote to stderr is kept in ``stderr`` to explain a
        failing exit."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        _, err = self.proc.communicate(timeout=PATIENCE_S)
        self.stderr = err.decode(errors="replace")[-4000:]
        return self.proc.returncode


@pytest.fixture
def kit(tmp_path: Path) -> Iterator[Kit]:
    k = Kit(tmp_path / "k")
    yield k
    k.close()


@pytest.fixture
def indexed(kit: Kit) -> Path:
    return corpus(kit)


@pytest.fixture
def served(kit: Kit, indexed: Path) -> Iterator[Served]:
    server = Served(kit.pi.config_path)
    try:
        wait_for(lambda: ping(kit.config) is not None or server.proc.poll() is not None)
        assert server.proc.poll() is None, server.proc.stderr.read() if server.proc.stderr else ""
        yield server
    finally:
        server.stop()


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_socket_is_private_and_output_is_identical_either_way(
    kit: Kit, capsys: pytest.CaptureFixture[str]
) -> None:
    path = corpus(kit)
    server = Served(kit.pi.config_path)
    try:
        wait_for(lambda: ping(kit.config) is not None)
        sock = socket_path(kit.config.index_dir)
        assert stat.S_ISSOCK(os.stat(sock).st_mode)
        assert stat.S_IMODE(os.stat(sock).st_mode) == 0o600
        assert stat.S_IMODE(os.stat(sock.parent).st_mode) == 0o700
        conf = ["--config", str(kit.pi.config_path), "--cwd", CWD, "--json"]
        follow = (
            '{"ref":"memory.expand","args":{"session":"'
            + str(path)
            + '","indices":[1],"maxChars":256}}'
        )
        commands = [
            ["recall", "timeout", "--scope", "project"],
            ["recall", "--tool", "bash", "--outcome", "failed", "--scope", "global"],
            ["expand", str(path), "--indices", "1", "--max-chars", "300"],
            ["expand", str(path), "--indices", "99"],  # answered error: exit 6
            ["sessions", "--scope", "project"],
            ["catalog", "--scope", "global"],
            ["call", follow],
            ["recall", "--page-size", "999"],  # invalid argument: exit 2
            ["expand", "/etc/passwd"],  # outside the roots
        ]
        before = ping(kit.config)
        assert before is not None
        capsys.readouterr()  # the indexer's log lines
        for command in commands:
            served = cli(capsys, *command, *conf)
            local = cli(capsys, *command, *conf, "--no-server")
            assert served == local, command
            assert served[0] in (0, 2, 6)  # 6: answered with an error (store.exits)
        after = ping(kit.config)
        assert after is not None
        # every one of them was answered by the server (invalid arguments included)
        assert after["requests"] - before["requests"] == len(commands)
    finally:
        assert server.stop() == 0, server.stderr
    assert not socket_path(kit.config.index_dir).exists()


def test_no_index_exits_4_both_ways(kit: Kit, capsys: pytest.CaptureFixture[str]) -> None:
    server = Served(kit.pi.config_path)
    try:
        wait_for(lambda: ping(kit.config) is not None)
        conf = ["--config", str(kit.pi.config_path), "--json"]
        served = cli(capsys, "recall", "x", *conf)
        local = cli(capsys, "recall", "x", *conf, "--no-server")
        assert served == local and served[0] == 4
        assert "pipeline run --once" in served[2]
    finally:
        server.stop()


def test_one_server_per_socket_and_a_dead_servers_socket_is_replaced(kit: Kit) -> None:
    corpus(kit)
    first = Served(kit.pi.config_path)
    try:
        wait_for(lambda: ping(kit.config) is not None)
        second = Served(kit.pi.config_path)
        assert second.proc.wait(PATIENCE_S) == 3
        assert (
            second.proc.stderr is not None and b"another query server" in second.proc.stderr.read()
        )
        second.stop()
        first.proc.kill()  # no clean-up: the socket file stays behind
        first.proc.wait(PATIENCE_S)
        assert socket_path(kit.config.index_dir).exists()
        assert ping(kit.config) is None
    finally:
        first.stop()
    third = Served(kit.pi.config_path)
    try:
        wait_for(lambda: ping(kit.config) is not None)
        with Backend(kit.config, server="require") as b:
            assert b.recall({"query": "flaky"}, cwd=CWD)["total"] == 1
    finally:
        assert third.stop() == 0, third.stderr


def test_sigint_also_stops_cleanly(kit: Kit) -> None:
    corpus(kit)
    server = Served(kit.pi.config_path, "--quiet")
    wait_for(lambda: ping(kit.config) is not None)
    server.proc.send_signal(signal.SIGINT)
    assert server.stop() == 0, server.stderr
    assert not socket_path(kit.config.index_dir).exists()


def test_concurrent_clients_all_get_their_answers(kit: Kit, served: Served) -> None:
    with Engine(kit.config) as engine:
        want = {q: engine.recall({"query": q, "scope": "project"}, cwd=CWD) for q in QUERIES}
    failures: list[str] = []

    def client(n: int) -> None:
        with Backend(kit.config, server="require") as b:
            for i in range(6):
                q = QUERIES[(n + i) % len(QUERIES)]
                if b.recall({"query": q, "scope": "project"}, cwd=CWD) != want[q]:
                    failures.append(q)

    threads = [threading.Thread(target=client, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert failures == []


QUERIES = ("timeout", "flaky", "word", "older", "nothing-here")


def test_a_new_generation_is_served_as_soon_as_current_moves(kit: Kit, served: Served) -> None:
    with Backend(kit.config, server="require") as b:
        assert b.recall({"query": "zanzibar", "scope": "project"}, cwd=CWD)["total"] == 0
        kit.session("new", [header("new", CWD), user("u", None, "zanzibar", T0)], mtime_s=3000)
        catch_up(kit.config, processes=1)
        got = b.recall({"query": "zanzibar", "scope": "project"}, cwd=CWD)
        assert got["total"] == 1 and b.served_by == "server"


def test_another_configuration_answers_in_process(kit: Kit, served: Served) -> None:
    other = kit.pi.base / "other.toml"
    other.write_text(kit.pi.config_path.read_text() + "maxSessions = 7\n")
    from store.config import load_config

    with Backend(load_config(other)) as b:
        assert b.sessions({"scope": "project"}, cwd=CWD)["sessions"]
        assert b.served_by == "in-process"
    with Backend(kit.config) as b:
        b.sessions({"scope": "project"}, cwd=CWD)
        assert b.served_by == "server"


# -- limits, with the server in a thread of this process -------------------------------------


class SlowEngine(Engine):
    def recall(self, args: Any, *, cwd: str | None = None) -> dict[str, Any]:
        if args.get("query") == "slow":
            time.sleep(1.0)
        return super().recall(args, cwd=cwd)


@pytest.fixture
def threaded(kit: Kit, indexed: Path) -> Iterator[QueryServer]:
    server = QueryServer(
        kit.config,
        ServeOptions(request_timeout=0.2, max_request_bytes=4096, idle_timeout=5),
        engine=SlowEngine(kit.config),
    )
    server.start()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        thread.join(10)


def raw_request(path: Path, payload: bytes) -> Any:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(10)
        s.connect(str(path))
        s.sendall(payload)
        return read_frame(s, 1 << 20)


def test_oversized_and_malformed_requests_get_structured_errors(
    kit: Kit, threaded: QueryServer
) -> None:
    too_big = raw_request(threaded.path, (10_000).to_bytes(4, "big") + b"x" * 10_000)
    assert too_big["ok"] is False and too_big["error"]["code"] == "request_too_large"
    garbage = raw_request(threaded.path, (5).to_bytes(4, "big") + b"{nope")
    assert garbage["error"]["code"] == "bad_request"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(10)
        s.connect(str(threaded.path))
        write_frame(s, {"op": "drop-tables", "args": {}, "cwd": CWD})
        assert read_frame(s, 1 << 20)["error"]["code"] == "bad_request"
        write_frame(s, {"op": "recall", "args": {"query": "flaky"}, "cwd": CWD})
        answer = read_frame(s, 1 << 20)  # the connection stays usable
        assert answer["ok"] is True and answer["result"]["total"] == 1


def test_a_slow_request_times_out_and_the_server_recovers(kit: Kit, threaded: QueryServer) -> None:
    with Backend(kit.config, server="require") as b:
        with pytest.raises(RequestTimeout, match="did not finish"):
            b.recall({"query": "slow"}, cwd=CWD)

        def answered() -> bool:  # queued behind the slow one, a request times out too
            try:
                return b.recall({"query": "flaky"}, cwd=CWD)["total"] == 1
            except RequestTimeout:
                return False

        wait_for(answered)


def test_a_removed_socket_is_bound_again(kit: Kit, threaded: QueryServer) -> None:
    threaded.path.unlink()
    wait_for(threaded.path.exists)
    with Backend(kit.config, server="require") as b:
        assert b.recall({"query": "flaky"}, cwd=CWD)["total"] == 1


def test_an_index_path_longer_than_sun_path_still_serves(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    kit = Kit(deep)
    try:
        corpus(kit)
        assert len(str(socket_path(kit.config.index_dir))) > 108
        server = QueryServer(kit.config)
        server.start()
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            with Backend(kit.config, server="require") as b:
                assert b.recall({"query": "flaky"}, cwd=CWD)["total"] == 1
        finally:
            server.shutdown()
            thread.join(10)
        assert not socket_path(kit.config.index_dir).exists()
    finally:
        kit.close()


def test_an_index_of_another_format_is_named_both_ways(
    kit: Kit, indexed: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import store.codec
    from store.errors import INDEX_OUTDATED, IndexOutdated

    # Given a server of a build that reads the next record format (the index is older)
    monkeypatch.setattr(store.codec, "SCHEMA_VERSION", store.codec.SCHEMA_VERSION + 1)
    server = QueryServer(kit.config, ServeOptions(idle_timeout=5))
    server.start()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        # Then the state travels named over the socket, and the CLI prints it as in-process
        with Backend(kit.config) as b, pytest.raises(IndexOutdated) as caught:
            b.recall({"query": "x", "scope": "global"}, cwd=CWD)
        assert caught.value.code == INDEX_OUTDATED and server.requests == 1  # the server said it
        conf = ["--config", str(kit.pi.config_path), "--json"]
        served = cli(capsys, "recall", "x", *conf)
        local = cli(capsys, "recall", "x", *conf, "--no-server")
        assert served == local and served[0] == 4
        assert f'"code":"{INDEX_OUTDATED}"' in served[1]
    finally:
        server.shutdown()
        thread.join(10)


def test_the_server_loads_the_generation_when_it_starts_not_at_a_tick(
    kit: Kit, indexed: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client that comes as soon as the socket exists (at login, beside a starting
    pipeline) found nothing loaded: the first tick came 0.5 s after the bind, and that client
    waited on the whole hot index (issue 22 item 11). The load begins at once now; with
    ticks an hour apart it still happens, and with no request."""
    import query.server as server_module

    monkeypatch.setattr(server_module, "_TICK", 3600.0)
    server = QueryServer(kit.config)
    server.start()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        wait_for(lambda: server.engine._generation is not None, timeout=60)
        assert server.requests == 0
    finally:
        server.shutdown()
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as wake:  # out of its accept
            wake.connect(str(server.path))
        thread.join(10)
