"""The web UI's HTTP surface: the page, its static files, and the JSON API.

::

    GET  /?token=T           sets the access cookie, then redirects to / (the token leaves the
                             address bar and the history)
    GET  /                   the page (cookie required)          GET /static/<file>
    GET  /api/status         {generation, servedBy, cwd, indexDir}
    GET  /api/events         server-sent events: ``generation`` whenever CURRENT moves
    POST /api/<op>           op in recall, expand, sessions, catalog, call; the body is the
    GET  /api/<op>?k=v…      args object (for call: the token), or the same as query parameters
                             (call: ?call=<token json>)
                             → the result object `query <op> --json` prints

Every request must carry the token: the cookie ``sessiondex_ui_<port>`` (HttpOnly,
SameSite=Strict), an ``Authorization: Bearer T`` header or ``?token=T``; without it the answer
is 403. A Host header naming anything but this loopback address is refused too (421), so a
page on another origin cannot reach the API through DNS rebinding. Answers carry a strict
Content-Security-Policy: the page runs only its own script, even if some text escaped its
escaping.
"""

from __future__ import annotations

import hmac
import os
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from importlib import resources
from pathlib import Path
from typing import Any, Final
from urllib.parse import parse_qs

import anyio
import orjson
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from query.timespec import TimeSpecError, parse_time
from query.transport import encode
from query.ui.answer import Answerer
from store.agents import agent_names
from store.errors import StoreError
from store.layout import IndexLayout
from store.reader import read_current

__all__ = ["API_OPS", "UiSettings", "build_app", "cookie_name"]

API_OPS: Final = ("recall", "expand", "sessions", "catalog", "call")
STATIC: Final = {
    "app.js": "text/javascript; charset=utf-8",
    "app.css": "text/css; charset=utf-8",
}
# Query-parameter spellings of the args that are not strings.
_INT_KEYS: Final = frozenset(
    {"pageSize", "snippetChars", "offset", "limit", "before", "after", "maxChars", "maxEntries",
     "entryOffset", "textOffset"}
)  # fmt: skip
_LIST_KEYS: Final = frozenset({"entryIds", "operationAddresses"})
_STATUS: Final = {
    "invalid_argument": 400,
    "request_too_large": 413,
    "no_index": 503,
    "index_upgrading": 503,
    "index_outdated": 503,
    "busy": 503,
    "shutting_down": 503,
    "request_timeout": 504,
}
_CSP: Final = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
_MAX_BODY: Final = 1 << 20
_EVENT_TICK: Final = 0.1
_KEEPALIVE: Final = 15.0

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGI = Callable[[Scope, Receive, Send], Awaitable[None]]


def cookie_name(port: int) -> str:
    """Cookies are per host, not per port: two UIs on one machine must not share one."""
    return f"sessiondex_ui_{port}"


class UiSettings:
    def __init__(self, *, token: str, host: str, port: int, cwd: str, index_dir: str) -> None:
        self.token = token
        self.host = host
        self.port = port
        self.cwd = cwd
        self.index_dir = index_dir
        shown = f"[{host}]" if ":" in host else host
        names = {shown, "localhost"} | ({"127.0.0.1"} if host.startswith("127.") else set())
        self.hosts = frozenset(f"{n}:{port}" for n in names)


def _json(body: Any, status: int = 200) -> Response:
    return Response(
        encode(body),
        status_code=status,
        media_type="application/json",
        headers={"Cache-Control": "no-store"},
    )


def _failed(code: str, message: str, status: int) -> Response:
    """An error that is not an answer: ``{"error": {"code", "message"}}`` with its status."""
    return _json({"error": {"code": code, "message": message}}, status)


def _static(name: str) -> bytes:
    return resources.files("query.ui").joinpath("static", name).read_bytes()


def _page() -> bytes:
    """The page, told every registered agent (``store.agents``) for its agent filter."""
    names = " ".join(agent_names()).encode()
    return _static("index.html").replace(b'data-agents=""', b'data-agents="' + names + b'"', 1)


def _query_args(op: str, request: Request) -> dict[str, Any]:
    """GET spellings: strings as given, integers parsed, repeated keys for lists."""
    if op == "call":
        raw = request.query_params.get("call")
        if raw is None:
            raise ValueError("GET /api/call takes the call token as ?call=<json>")
        token = orjson.loads(raw)
        if not isinstance(token, dict):
            raise ValueError('a call token is a JSON object {"ref": ..., "args": {...}}')
        return token
    args: dict[str, Any] = {}
    for key, values in parse_qs(request.url.query, keep_blank_values=False).items():
        if key == "token":
            continue
        if key in _LIST_KEYS:
            args[key] = values
            continue
        value = values[-1]
        try:
            if key in _INT_KEYS:
                args[key] = int(value)
            elif key == "indices":
                args[key] = [int(i) for i in value.split(",") if i.strip()]
            elif key == "entryRange":
                first, _, last = value.partition(":")
                args[key] = {"first": int(first), "last": int(last)}
            else:
                args[key] = value
        except ValueError:
            shape = {"indices": "comma-separated integers", "entryRange": "FIRST:LAST"}
            raise ValueError(
                f"{key} takes {shape.get(key, 'an integer')} (got {value!r})"
            ) from None
    return args


def _times(args: dict[str, Any]) -> dict[str, Any]:
    """``since`` / ``until`` may be written as the CLI takes them (``7d``, an ISO date)."""
    for key, end in (("since", False), ("until", True)):
        value = args.get(key)
        if isinstance(value, str):
            try:
                args[key] = parse_time(value, end_of_day=end)
            except TimeSpecError as exc:
                raise ValueError(str(exc)) from None
    return args


def build_app(answer: Answerer, settings: UiSettings) -> ASGI:
    """The ASGI application (see the module docstring); *answer* runs in a worker thread."""
    index = Path(settings.index_dir)
    current = IndexLayout(index).current

    def generation() -> int | None:
        try:
            return read_current(index)
        except (StoreError, OSError):
            return None

    async def page(request: Request) -> Response:
        return Response(
            _page(),
            media_type="text/html; charset=utf-8",
            headers={"Cache-Control": "no-store"},
        )

    async def no_icon(request: Request) -> Response:
        return Response(status_code=204)

    async def static(request: Request) -> Response:
        name = request.path_params["name"]
        kind = STATIC.get(name)
        if kind is None:
            return Response("not found", status_code=404, media_type="text/plain")
        return Response(_static(name), media_type=kind, headers={"Cache-Control": "no-cache"})

    async def status(request: Request) -> Response:
        return _json(
            {
                "generation": await run_in_threadpool(generation),
                "servedBy": answer.served_by,
                "cwd": settings.cwd,
                "indexDir": settings.index_dir,
            }
        )

    async def events(request: Request) -> Response:
        async def stream() -> AsyncIterator[bytes]:
            seen: tuple[int, int] | None = None
            last: int | None = -1
            quiet = 0.0
            while True:
                try:
                    st = os.stat(current)
                    stamp: tuple[int, int] | None = (st.st_ino, st.st_mtime_ns)
                except OSError:
                    stamp = None
                if stamp != seen or seen is None:
                    seen = stamp
                    now = generation()
                    if now != last:
                        last = now
                        quiet = 0.0
                        yield (
                            b"event: generation\ndata: "
                            + orjson.dumps({"generation": now})
                            + b"\n\n"
                        )
                if quiet >= _KEEPALIVE:
                    quiet = 0.0
                    yield b": keepalive\n\n"
                await anyio.sleep(_EVENT_TICK)
                quiet += _EVENT_TICK

        return StreamingResponse(
            stream(),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )

    async def api(request: Request) -> Response:
        op = request.path_params["op"]
        if op not in API_OPS:
            known = ", ".join(API_OPS)
            return _failed("not_found", f"no API operation {op!r}; try {known}", 404)
        try:
            if request.method == "POST":
                body = await request.body()
                if len(body) > _MAX_BODY:
                    too_large = f"a request body is at most {_MAX_BODY} bytes"
                    return _failed("request_too_large", too_large, 413)
                args = orjson.loads(body) if body.strip() else {}
                if not isinstance(args, dict):
                    raise ValueError("the request body must be a JSON object")
            else:
                args = _query_args(op, request)
            if op != "call":
                _times(args)
        except (ValueError, orjson.JSONDecodeError) as exc:
            return _failed("invalid_argument", str(exc), 400)
        frame = await run_in_threadpool(answer, op, args, settings.cwd)
        if frame.get("ok") is True:
            return _json(frame["result"])
        error = frame.get("error") or {}
        code = str(error.get("code", "internal_error"))
        return _failed(code, str(error.get("message", "")), _STATUS.get(code, 500))

    app = Starlette(
        routes=[
            Route("/", page),
            Route("/static/{name}", static),
            Route("/favicon.ico", no_icon),
            Route("/api/status", status),
            Route("/api/events", events),
            Route("/api/{op}", api, methods=["GET", "POST"]),
        ]
    )
    return _guard(app, settings)


def _guard(app: ASGI, settings: UiSettings) -> ASGI:
    """The token and Host checks in front of every route, and the security headers."""
    token = settings.token.encode("ascii")
    cookie = cookie_name(settings.port)
    headers_out = [
        (b"content-security-policy", _CSP.encode("ascii")),
        (b"x-content-type-options", b"nosniff"),
        (b"referrer-policy", b"no-referrer"),
        (b"x-frame-options", b"DENY"),
    ]

    async def refuse(send: Send, status: int, text: str) -> None:
        body = text.encode("utf-8")
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"text/plain; charset=utf-8"),
                    (b"content-length", str(len(body)).encode("ascii")),
                    *headers_out,
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})

    def given(scope: Scope) -> tuple[bytes | None, bytes | None, bytes | None, bytes]:
        host = auth = jar = None
        for name, value in scope.get("headers", []):
            if name == b"host":
                host = value
            elif name == b"authorization":
                auth = value
            elif name == b"cookie":
                jar = value if jar is None else jar + b"; " + value
        query = scope.get("query_string", b"")
        return host, auth, jar, query

    def matches(candidate: bytes | None) -> bool:
        return candidate is not None and hmac.compare_digest(candidate, token)

    def from_cookie(jar: bytes | None) -> bytes | None:
        if jar is None:
            return None
        for part in jar.split(b";"):
            name, _, value = part.strip().partition(b"=")
            if name.decode("latin-1") == cookie:
                return value
        return None

    def from_query(query: bytes) -> bytes | None:
        for value in parse_qs(query.decode("latin-1")).get("token", []):
            return value.encode("latin-1")
        return None

    async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        host, auth, jar, query = given(scope)
        if host is None or host.decode("latin-1").lower() not in settings.hosts:
            await refuse(send, 421, "this server answers only on its own loopback address\n")
            return
        bearer = auth[7:] if auth is not None and auth[:7].lower() == b"bearer " else None
        in_query = from_query(query)
        if not (matches(from_cookie(jar)) or matches(bearer) or matches(in_query)):
            await refuse(
                send,
                403,
                "refused: open the link `query ui` printed (it carries this start's token)\n",
            )
            return
        if in_query is not None and scope["path"] == "/" and scope["method"] == "GET":
            # First visit: keep the token in a cookie only, and take it out of the address.
            await send(
                {
                    "type": "http.response.start",
                    "status": 303,
                    "headers": [
                        (b"location", b"/"),
                        (
                            b"set-cookie",
                            f"{cookie}={settings.token}; HttpOnly; SameSite=Strict; Path=/".encode(
                                "ascii"
                            ),
                        ),
                        (b"cache-control", b"no-store"),
                        (b"content-length", b"0"),
                        *headers_out,
                    ],
                }
            )
            await send({"type": "http.response.body", "body": b""})
            return

        async def with_headers(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *headers_out]
            await send(message)

        await app(scope, receive, with_headers)

    return guarded
