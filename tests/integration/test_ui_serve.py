"""`query serve --http`: the web UI's API beside the socket, answered by the server's engine."""

from __future__ import annotations

import http.client
import json
import selectors
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.catchup import catch_up
from query.transport import Backend
from tests.doubles import wait_for
from tests.helpers import PiRoot, assistant, header, user

pytestmark = pytest.mark.integration

T0 = 1_700_000_000_000


def test_serve_http_answers_the_api_through_the_socket_servers_engine(tmp_path: Path) -> None:
    pi = PiRoot(tmp_path)
    config = pi.write_config()
    pi.session("s", [header("h-1", "/work/proj", T0), user("u1", None, "emuterm here", T0 + 1),
                     assistant("a1", "u1", "emuterm answered", T0 + 2)])  # fmt: skip
    catch_up(config, processes=1)
    server = subprocess.Popen(
        [sys.executable, "-m", "query", "serve", "--http", "0", "--config", str(pi.config_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert server.stdout is not None
        sel = selectors.DefaultSelector()
        sel.register(server.stdout, selectors.EVENT_READ)
        assert sel.select(timeout=60), "query serve --http printed no URL"
        url = server.stdout.readline().split()[-1]
        assert url.startswith("http://127.0.0.1:")
        port = int(url.split(":")[2].split("/")[0])
        token = url.split("token=")[1]

        def get(path: str, auth: bool = True) -> tuple[int, bytes]:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            try:
                headers = {"Authorization": f"Bearer {token}"} if auth else {}
                conn.request("GET", path, headers=headers)
                r = conn.getresponse()
                return r.status, r.read()
            finally:
                conn.close()

        assert get("/api/status", auth=False)[0] == 403
        status, body = get("/api/status")
        assert status == 200 and json.loads(body)["servedBy"] == "server"
        status, body = get("/api/recall?query=emuterm&scope=global")
        assert status == 200
        with Backend(config, server="off") as local:
            expected = local.recall({"query": "emuterm", "scope": "global"}, cwd="/")
        assert json.loads(body) == expected
        # the socket server answers as before, and counted the HTTP request as its own
        with Backend(config, server="require") as remote:
            wait_for(lambda: remote.ping(), timeout=30, what="the socket server")
            ping = remote.ping()
            assert ping is not None and ping["requests"] >= 1
    finally:
        server.send_signal(signal.SIGTERM)
        server.communicate(timeout=30)
    assert server.returncode == 0
