"""`query ui` without a browser: loopback only, the token, read-only, escaping, API shapes.

A real uvicorn serves a real index (built by the pipeline) on 127.0.0.1:0; requests go over
TCP with urllib, so what is tested is what a browser or another tool gets.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import socket
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from query.cli import main
from query.ui.answer import LocalAnswerer
from query.ui.app import cookie_name
from query.ui.run import NotLoopback, UiServer, bind_loopback, loopback
from tests.doubles import wait_for
from tests.helpers import assistant, bash, header, tool_result, user
from tests.unit.query.kit import CWD, T0, Kit

HOSTILE = "<script>document.title='owned'</script><img src=x onerror=alert(1)>"


def _records() -> list[dict[str, Any]]:
    return [
        header("ui-1", CWD, T0),
        user("u1", None, f"why does the quokkaterm test fail? {HOSTILE}", T0 + 1),
        assistant("a1", "u1", "Let me run it.", T0 + 2,
                  {"id": "call-t1", "name": "bash", "arguments": {"command": "pytest"}}),
        tool_result("t1", "a1", "bash", "FAILED quokkaterm " + "x" * 3000, T0 + 3, error=True),
        assistant("a2", "t1", "The quokkaterm fixture is stale.", T0 + 4),
        assistant("b1", "u1", "abandoned branch about wombats", T0 + 5),
        user("u2", "a2", "ok", T0 + 6),
        bash("x1", "u2", "ls", "done", T0 + 7),
    ]  # fmt: skip


class Ui:
    def __init__(self, server: UiServer) -> None:
        self.server = server
        self.port = server.port
        self.token = server.token

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        token: str | None = "bearer",
        headers: dict[str, str] | None = None,
    ) -> tuple[int, dict[str, str], bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        sent = dict(headers or {})
        if token == "bearer":
            sent["Authorization"] = f"Bearer {self.token}"
        data = None if body is None else json.dumps(body).encode()
        if data is not None:
            sent["Content-Type"] = "application/json"
        try:
            conn.request(method, path, body=data, headers=sent)
            r = conn.getresponse()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
        finally:
            conn.close()

    def api(self, op: str, args: dict[str, Any]) -> Any:
        status, _, body = self.request("POST", f"/api/{op}", args)
        assert status == 200, body
        return json.loads(body)


@pytest.fixture
def built(kit: Kit) -> Kit:
    kit.session("s1", _records())
    kit.session("s2", [header("ui-2", "/work/other", T0 + 50), user("v1", None, "hi", T0 + 51)],
                cwd="/work/other")  # fmt: skip
    kit.build()
    return kit


@pytest.fixture
def ui(built: Kit) -> Iterator[Ui]:
    answer = LocalAnswerer(built.config, server=False)
    server = UiServer(
        answer, bind_loopback("127.0.0.1", 0), cwd=CWD, index_dir=str(built.config.index_dir)
    )
    server.start()
    wait_for(lambda: server.server.started, timeout=30, what="uvicorn started")
    try:
        yield Ui(server)
    finally:
        server.stop()
        answer.close()


# ------------------------------------------------------------------------------- loopback


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.10", "10.0.0.1", "example.com", ""])
def test_addresses_other_than_loopback_are_refused(host: str) -> None:
    with pytest.raises(NotLoopback):
        bind_loopback(host, 0)


@pytest.mark.parametrize(
    ("host", "address"), [("127.0.0.1", "127.0.0.1"), ("localhost", "127.0.0.1")]
)
def test_loopback_binds_exactly_that_address(host: str, address: str) -> None:
    assert loopback(host) == address
    sock = bind_loopback(host, 0)
    try:
        bound, port = sock.getsockname()[:2]
        assert bound == address and port > 0
        # asyncio sets TCP_NODELAY on accepted sockets only when proto says TCP (else every
        # kept-alive answer waits for a delayed ACK)
        assert sock.proto == socket.IPPROTO_TCP
    finally:
        sock.close()


def test_query_ui_refuses_a_public_address(built: Kit, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["ui", "--config", str(built.pi.config_path), "--host", "0.0.0.0", "--port", "0"])
    assert code == 2
    assert "refusing to listen on 0.0.0.0" in capsys.readouterr().err


def test_a_taken_port_is_a_clear_error(built: Kit, capsys: pytest.CaptureFixture[str]) -> None:
    taken = bind_loopback("127.0.0.1", 0)
    try:
        port = taken.getsockname()[1]
        code = main(["ui", "--config", str(built.pi.config_path), "--port", str(port)])
    finally:
        taken.close()
    assert code == 1
    assert f"cannot listen on 127.0.0.1:{port}" in capsys.readouterr().err


def test_the_server_listens_on_loopback_only(ui: Ui) -> None:
    assert ui.server.sock.getsockname()[0] == "127.0.0.1"
    # Another local address of this machine, when it has one, does not answer.
    try:
        others = {
            a[4][0] for a in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET)
        } - {"127.0.0.1"}
    except OSError:
        others = set()
    for other in sorted(others):
        if other.startswith("127."):
            continue
        with pytest.raises(OSError), socket.create_connection((other, ui.port), timeout=2):
            pass


# ---------------------------------------------------------------------------------- token


@pytest.mark.parametrize(
    "path", ["/", "/static/app.js", "/api/status", "/api/events", "/api/sessions"]
)
def test_requests_without_the_token_are_refused(ui: Ui, path: str) -> None:
    status, _, body = ui.request("GET", path, token=None)
    assert status == 403
    assert b"refused" in body


def test_a_wrong_token_is_refused_everywhere(ui: Ui) -> None:
    wrong = "x" * len(ui.token)
    for headers in (
        {"Authorization": f"Bearer {wrong}"},
        {"Cookie": f"{cookie_name(ui.port)}={wrong}"},
    ):
        assert ui.request("GET", "/api/status", token=None, headers=headers)[0] == 403
    assert ui.request("GET", f"/?token={wrong}", token=None)[0] == 403
    # a cookie for another port's UI is not this one's
    other = {"Cookie": f"{cookie_name(ui.port + 1)}={ui.token}"}
    assert ui.request("GET", "/api/status", token=None, headers=other)[0] == 403


def test_the_printed_url_sets_a_strict_cookie_and_drops_the_token(ui: Ui) -> None:
    assert ui.server.url == f"http://127.0.0.1:{ui.port}/?token={ui.token}"
    status, headers, _ = ui.request("GET", f"/?token={ui.token}", token=None)
    assert status == 303
    assert headers["location"] == "/"
    cookie = headers["set-cookie"]
    assert cookie.startswith(f"{cookie_name(ui.port)}={ui.token};")
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    # and the cookie alone now opens the page and the API
    jar = {"Cookie": f"{cookie_name(ui.port)}={ui.token}"}
    status, headers, page = ui.request("GET", "/", token=None, headers=jar)
    assert status == 200 and b"/static/app.js" in page
    assert ui.request("GET", "/api/status", token=None, headers=jar)[0] == 200


def test_a_foreign_host_header_is_refused(ui: Ui) -> None:
    status, _, _ = ui.request("GET", "/api/status", headers={"Host": f"evil.example:{ui.port}"})
    assert status == 421
    assert ui.request("GET", "/api/status", headers={"Host": f"localhost:{ui.port}"})[0] == 200


def test_each_start_has_its_own_token(built: Kit) -> None:
    answer = LocalAnswerer(built.config, server=False)
    tokens = set()
    for _ in range(2):
        sock = bind_loopback("127.0.0.1", 0)
        server = UiServer(answer, sock, cwd=CWD, index_dir=str(built.config.index_dir))
        tokens.add(server.token)
        sock.close()
    assert len(tokens) == 2 and all(len(t) >= 32 for t in tokens)


# ------------------------------------------------------------------------------ the API


def test_api_answers_are_the_cli_json_objects(ui: Ui, built: Kit) -> None:
    engine = built.engine
    recall = {"query": "quokkaterm", "scope": "global", "pageSize": 2}
    got = ui.api("recall", recall)
    assert got == engine.recall(recall, cwd=CWD)
    assert got["next"] is not None
    assert ui.api("call", got["next"]) == engine.call(got["next"], cwd=CWD)
    hit = got["hits"][0]
    assert ui.api("call", hit["follow"]) == engine.call(hit["follow"], cwd=CWD)
    expand = {"session": hit["follow"]["args"]["session"], "branches": "all", "indices": [0, 5]}
    assert ui.api("expand", expand) == engine.expand(expand, cwd=CWD)
    assert ui.api("sessions", {"scope": "global"}) == engine.sessions({"scope": "global"}, cwd=CWD)
    from query.catalog import catalog_for

    assert ui.api("catalog", {"scope": "global"}) == catalog_for(
        engine, {"scope": "global"}, cwd=CWD
    )


def test_get_spellings_match_post(ui: Ui) -> None:
    post = ui.api("recall", {"query": "quokkaterm", "scope": "global", "pageSize": 2})
    status, headers, body = ui.request(
        "GET", "/api/recall?query=quokkaterm&scope=global&pageSize=2"
    )
    assert status == 200 and headers["content-type"].startswith("application/json")
    assert json.loads(body) == post


def test_get_takes_lists_ranges_and_call_tokens(ui: Ui, built: Kit) -> None:
    page = ui.api("recall", {"query": "quokkaterm", "scope": "global", "pageSize": 1})
    session = page["hits"][0]["follow"]["args"]["session"]
    quoted = urllib.parse.quote(session)
    status, _, body = ui.request("GET", f"/api/expand?session={quoted}&indices=0,1")
    assert status == 200 and [e["index"] for e in json.loads(body)["entries"]] == [0, 1]
    status, _, body = ui.request("GET", f"/api/expand?session={quoted}&entryRange=1:2")
    assert status == 200 and [e["index"] for e in json.loads(body)["entries"]] == [1, 2]
    call = urllib.parse.quote(json.dumps(page["next"]))
    status, _, body = ui.request("GET", f"/api/call?call={call}")
    assert status == 200 and json.loads(body) == built.engine.call(page["next"], cwd=CWD)
    status, _, body = ui.request("GET", "/api/recall?query=x&pageSize=ten")
    assert status == 400
    assert json.loads(body)["error"]["message"] == "pageSize takes an integer (got 'ten')"


def test_times_are_taken_as_the_cli_takes_them(ui: Ui) -> None:
    # the fixture's entries are from 2023: none is younger than a week, all are after 2020
    assert ui.api("recall", {"query": "quokkaterm", "scope": "global", "since": "7d"})["hits"] == []
    older = ui.api("recall", {"query": "quokkaterm", "scope": "global", "since": "2020-01-01"})
    assert older["hits"]
    status, _, body = ui.request("POST", "/api/recall", {"query": "q", "since": "soon"})
    assert status == 400 and json.loads(body)["error"]["code"] == "invalid_argument"


def test_bad_requests_get_structured_errors(ui: Ui) -> None:
    status, _, body = ui.request("POST", "/api/recall", {"bogus": 1})
    assert status == 400
    assert json.loads(body)["error"]["code"] == "invalid_argument"
    status, _, body = ui.request("POST", "/api/recall", [1, 2])
    assert status == 400
    status, _, body = ui.request("POST", "/api/nothing", {})
    assert status == 404 and json.loads(body)["error"]["code"] == "not_found"
    # an answered error is a result, exactly as `query expand --json` prints it
    status, _, body = ui.request("POST", "/api/expand", {"session": "no-such-session"})
    assert status == 200
    assert json.loads(body)["error"]["code"] == "session_not_found"


def test_status_names_the_generation(ui: Ui, built: Kit) -> None:
    from store.reader import read_current

    status, _, body = ui.request("GET", "/api/status")
    assert status == 200
    assert json.loads(body)["generation"] == read_current(built.config.index_dir)


def test_events_announce_the_current_generation(ui: Ui) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", ui.port, timeout=30)
    try:
        conn.request("GET", "/api/events", headers={"Authorization": f"Bearer {ui.token}"})
        r = conn.getresponse()
        assert r.status == 200 and r.getheader("content-type", "").startswith("text/event-stream")
        assert r.readline() == b"event: generation\n"
        assert json.loads(r.readline().removeprefix(b"data: "))["generation"] >= 1
    finally:
        conn.close()


# ------------------------------------------------------------------------------ escaping


def test_hostile_text_is_data_never_markup(ui: Ui) -> None:
    status, headers, body = ui.request(
        "POST", "/api/recall", {"query": "quokkaterm", "scope": "global"}
    )
    assert headers["content-type"] == "application/json"
    assert headers["x-content-type-options"] == "nosniff"
    # the API hands the text back verbatim, as JSON data
    assert any(HOSTILE in h["snippet"] for h in json.loads(body)["hits"])
    # the page itself carries no session text, and runs only its own script
    status, headers, page = ui.request("GET", "/")
    assert b"quokkaterm" not in page and b"<script>document" not in page
    csp = headers["content-security-policy"]
    assert "script-src 'self'" in csp and "default-src 'none'" in csp
    assert "unsafe-inline" not in csp
    # the script builds every node from text (no innerHTML / document.write anywhere)
    _, _, script = ui.request("GET", "/static/app.js")
    for sink in (b"innerHTML", b"outerHTML", b"insertAdjacentHTML", b"document.write", b"eval("):
        assert sink not in script


def test_static_files_are_package_data_and_nothing_else_is_served(ui: Ui) -> None:
    for name, kind in (("app.js", "text/javascript"), ("app.css", "text/css")):
        status, headers, _ = ui.request("GET", f"/static/{name}")
        assert status == 200 and headers["content-type"].startswith(kind)
    assert ui.request("GET", "/static/../answer.py")[0] == 404
    assert ui.request("GET", "/static/index.html")[0] == 404
    # no external asset: every src/href the page names is local
    _, _, page = ui.request("GET", "/")
    assert (
        b"http://" not in page
        and b"https://" not in page
        and b"//" not in page.replace(b"<!doctype html>", b"")
    )


# ----------------------------------------------------------------------------- read-only


def _listing(folder: Path) -> dict[str, tuple[int, int, str]]:
    out: dict[str, tuple[int, int, str]] = {}
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = Path(root) / name
            st = path.lstat()
            digest = hashlib.blake2b(path.read_bytes()).hexdigest() if path.is_file() else ""
            out[str(path.relative_to(folder))] = (st.st_mode, st.st_mtime_ns, digest)
    return out


def test_a_session_of_requests_leaves_the_index_folder_unchanged(ui: Ui, built: Kit) -> None:
    index = Path(built.config.index_dir)
    before = _listing(index)
    assert before
    page = ui.api("recall", {"query": "quokkaterm", "scope": "global", "pageSize": 1})
    while page["next"] is not None:
        page = ui.api("call", page["next"])
    for args in ({"query": "quokka.*", "queryMode": "regex", "scope": "global"},
                 {"query": "quokkaterm fixture", "queryMode": "phrase", "scope": "global"},
                 {"scope": "global", "outcome": "failed"}):  # fmt: skip
        ui.api("recall", args)
    session = page["hits"][0]["follow"]["args"]["session"]
    ui.api("expand", {"session": session, "branches": "all", "entryRange": {"first": 0, "last": 6}})
    ui.api("sessions", {"scope": "global"})
    ui.api("catalog", {"scope": "global"})
    for path in ("/", "/static/app.js", "/static/app.css", "/api/status", "/favicon.ico"):
        assert ui.request("GET", path)[0] in (200, 204)
    ui.request("GET", "/api/nothing")
    ui.request("GET", "/", token=None)
    assert _listing(index) == before


def test_before_the_first_index_the_api_says_so(kit: Kit) -> None:
    kit.session("s1", _records())  # written, not indexed yet
    answer = LocalAnswerer(kit.config, server=False)
    server = UiServer(
        answer, bind_loopback("127.0.0.1", 0), cwd=CWD, index_dir=str(kit.config.index_dir)
    )
    server.start()
    wait_for(lambda: server.server.started, timeout=30, what="uvicorn started")
    try:
        ui = Ui(server)
        status, _, body = ui.request("POST", "/api/recall", {"query": "quokkaterm"})
        assert status == 503 and json.loads(body)["error"]["code"] == "no_index"
        status, _, body = ui.request("GET", "/api/status")
        assert status == 200 and json.loads(body)["generation"] is None
    finally:
        server.stop()
        answer.close()
    assert not Path(kit.config.index_dir).exists()  # and nothing was made on the way


def test_the_page_offers_every_tool_family_recall_takes() -> None:
    import re

    from store.names import TOOL_FAMILIES

    script = (Path(__file__).resolve().parents[3] / "query/ui/static/app.js").read_text()
    found = re.search(r"const FAMILIES = \[(.*?)\];", script)
    assert found is not None
    assert tuple(re.findall(r'"([a-z]+)"', found.group(1))) == TOOL_FAMILIES
    recall_args = script.split("function recallArgs", 1)[1].split("return args", 1)[0]
    assert '"kind"' in recall_args  # the chip's value reaches recall


def test_the_page_offers_every_registered_agent(ui: Ui) -> None:
    from store.agents import agent_names

    status, _, body = ui.request("GET", "/")
    assert status == 200
    assert f'<body data-agents="{" ".join(agent_names())}">'.encode() in body
    script = (Path(__file__).resolve().parents[3] / "query/ui/static/app.js").read_text()
    assert '["agent", "agent", ["", ...AGENTS]]' in script
    assert "document.body.dataset.agents" in script
