"""A scripted fake model on 127.0.0.1 for the real agent CLIs.

One HTTP server speaks the three streaming wire APIs today's CLIs use: OpenAI Chat Completions
(Pi), Anthropic Messages (Claude Code) and OpenAI Responses (Codex). A scenario loads a *script*:
an ordered list of turns, each either tool calls or a final answer. Every model request takes
the next turn, whatever API it came in on, so one scenario reads the same on every agent. When
the script runs out the server answers a plain final text and counts an overrun, which the
harness reports as a failure: that is the loop guard (an agent re-prompting forever stops after
one extra turn instead of spinning, and after ``MAX_OVERRUNS`` every request is refused). The
server runs on a daemon thread and stops with ``close()`` (fixture teardown) or with the
process.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["Call", "FakeModel", "Turn"]

OVERRUN_TEXT = "The scripted model has no more turns."
MAX_OVERRUNS = 3  # then every request is refused with a 400, which no CLI retries


@dataclass(frozen=True)
class Call:
    """One tool call the model makes. ``name`` is the name the model sees in its tool list."""

    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class Turn:
    """One model response: tool calls, or (when there are none) the final ``text``."""

    calls: tuple[Call, ...] = ()
    text: str = ""

    @staticmethod
    def tool(name: str, **arguments: Any) -> Turn:
        return Turn(calls=(Call(name, arguments),))

    @staticmethod
    def say(text: str) -> Turn:
        return Turn(text=text)


@dataclass
class Request:
    path: str
    body: dict[str, Any]


@dataclass
class _State:
    turns: list[Turn] = field(default_factory=list)
    served: int = 0
    overruns: int = 0
    requests: list[Request] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


class FakeModel:
    """The server. ``load(turns)`` before each CLI run; ``url`` is ``http://127.0.0.1:PORT``."""

    def __init__(self) -> None:
        self._state = _State()
        state = self._state

        class Handler(_Handler):
            shared = state

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, name="fake-model", daemon=True
        )
        self._thread.start()

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def load(self, turns: list[Turn]) -> None:
        with self._state.lock:
            self._state.turns = list(turns)
            self._state.served = 0
            self._state.overruns = 0
            self._state.requests = []

    @property
    def remaining(self) -> int:
        with self._state.lock:
            return len(self._state.turns) - self._state.served

    @property
    def overruns(self) -> int:
        return self._state.overruns

    @property
    def requests(self) -> list[Request]:
        with self._state.lock:
            return list(self._state.requests)

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=10)


class _Handler(BaseHTTPRequestHandler):
    shared: _State
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        if self.path.rstrip("/").endswith("/models"):
            self._json({"object": "list", "data": [{"id": "fake-1", "object": "model"}]})
        else:
            self._json({"error": {"message": f"no such path {self.path}"}}, status=404)

    def do_HEAD(self) -> None:  # noqa: N802
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {"unparsed": raw.decode("utf-8", "replace")}
        path = self.path.split("?", 1)[0]
        if path.endswith("/count_tokens"):
            self._json({"input_tokens": 10})
            return
        if path.endswith(":countTokens"):
            self._json({"totalTokens": 10})
            return
        with self.shared.lock:
            self.shared.requests.append(Request(self.path, body))
            if self.shared.served < len(self.shared.turns):
                turn = self.shared.turns[self.shared.served]
                self.shared.served += 1
            else:
                self.shared.overruns += 1
                if self.shared.overruns > MAX_OVERRUNS:
                    refusal = {"type": "invalid_request_error", "message": "turn cap reached"}
                    self._json({"type": "error", "error": refusal}, status=400)
                    return
                turn = Turn.say(OVERRUN_TEXT)
        if path.endswith("/chat/completions"):
            events = _chat_events(turn, body)
        elif path.endswith("/messages"):
            events = _messages_events(turn)
        elif path.endswith("/responses"):
            events = _responses_events(turn, body)
        elif path.endswith(":streamGenerateContent"):
            events = _gemini_events(turn)
        elif path.endswith(":generateContent"):
            self._json(_gemini_response(turn))
            return
        else:
            self._json({"error": {"message": f"no such path {self.path}"}}, status=404)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        for chunk in events:
            self.wfile.write(chunk)
        self.wfile.flush()
        self.close_connection = True

    def _json(self, obj: Any, status: int = 200) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def _sse(data: Any, event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    payload = data if isinstance(data, str) else json.dumps(data)
    return f"{head}data: {payload}\n\n".encode()


def _id(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:24]}"


USAGE = {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}


def _chat_events(turn: Turn, body: dict[str, Any]) -> Iterator[bytes]:
    cid = _id("chatcmpl-")
    base = {"id": cid, "object": "chat.completion.chunk", "created": 0, "model": "fake-1"}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return _sse({**base, "choices": [choice]})

    yield chunk({"role": "assistant", "content": ""})
    if turn.calls:
        for i, call in enumerate(turn.calls):
            head = {"index": i, "id": _id("call_"), "type": "function"}
            function = {"name": call.name, "arguments": ""}
            yield chunk({"tool_calls": [{**head, "function": function}]})
            args = json.dumps(call.arguments)
            yield chunk({"tool_calls": [{"index": i, "function": {"arguments": args}}]})
        yield chunk({}, "tool_calls")
    else:
        yield chunk({"content": turn.text})
        yield chunk({}, "stop")
    yield _sse({**base, "choices": [], "usage": USAGE})
    yield _sse("[DONE]")


GEMINI_USAGE = {"promptTokenCount": 100, "candidatesTokenCount": 20, "totalTokenCount": 120}


def _gemini_response(turn: Turn) -> dict[str, Any]:
    """One ``GenerateContentResponse`` of the Gemini API (Gemini CLI's wire): function calls,
    or the final text."""
    parts: list[dict[str, Any]] = [
        {"functionCall": {"id": _id("call_"), "name": c.name, "args": c.arguments}}
        for c in turn.calls
    ]
    if not turn.calls:
        parts.append({"text": turn.text})
    candidate = {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
    return {"candidates": [candidate], "usageMetadata": GEMINI_USAGE, "modelVersion": "fake-1"}


def _gemini_events(turn: Turn) -> Iterator[bytes]:
    """``streamGenerateContent?alt=sse``: the whole response as one SSE chunk."""
    yield _sse(_gemini_response(turn))


def _event(kind: str, **fields: Any) -> bytes:
    """One named SSE event whose data repeats the name as ``type`` (Messages and Responses)."""
    return _sse({"type": kind, **fields}, kind)


def _messages_events(turn: Turn) -> Iterator[bytes]:
    message: dict[str, Any] = {
        "id": _id("msg_"), "type": "message", "role": "assistant", "model": "fake-1",
        "content": [], "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": 100, "output_tokens": 1},
    }  # fmt: skip
    yield _event("message_start", message=message)
    blocks: list[tuple[dict[str, Any], dict[str, Any]]] = []
    if turn.text or not turn.calls:
        blocks.append(({"type": "text", "text": ""}, {"type": "text_delta", "text": turn.text}))
    for call in turn.calls:
        block = {"type": "tool_use", "id": _id("toolu_"), "name": call.name, "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(call.arguments)}
        blocks.append((block, delta))
    for index, (block, delta) in enumerate(blocks):
        yield _event("content_block_start", index=index, content_block=block)
        yield _event("content_block_delta", index=index, delta=delta)
        yield _event("content_block_stop", index=index)
    stop = "tool_use" if turn.calls else "end_turn"
    yield _event(
        "message_delta",
        delta={"stop_reason": stop, "stop_sequence": None},
        usage={"output_tokens": 20},
    )
    yield _event("message_stop")


def _codex_tool(name: str, body: dict[str, Any]) -> tuple[str, str | None]:
    """Codex declares MCP tools inside a namespace: ``mcp__S__T`` is sent as (T, mcp__S)."""
    for tool in body.get("tools") or []:
        if tool.get("type") == "namespace":
            ns = str(tool.get("name", ""))
            for inner in tool.get("tools") or []:
                if f"{ns}__{inner.get('name')}" == name:
                    return str(inner["name"]), ns
    return name, None


def _responses_events(turn: Turn, body: dict[str, Any]) -> Iterator[bytes]:
    seq = iter(range(1_000_000))
    response = {
        "id": _id("resp_"), "object": "response", "created_at": 0, "status": "in_progress",
        "model": "fake-1", "output": [],
    }  # fmt: skip
    yield _event("response.created", sequence_number=next(seq), response=response)
    items: list[dict[str, Any]] = []
    for index, call in enumerate(turn.calls):
        name, namespace = _codex_tool(call.name, body)
        item: dict[str, Any] = {
            "type": "function_call", "id": _id("fc_"), "call_id": _id("call_"),
            "name": name, "arguments": "", "status": "in_progress",
        }  # fmt: skip
        if namespace:
            item["namespace"] = namespace
        yield _event(
            "response.output_item.added", sequence_number=next(seq), output_index=index, item=item
        )
        args = json.dumps(call.arguments)
        yield _event(
            "response.function_call_arguments.delta",
            sequence_number=next(seq), output_index=index, item_id=item["id"], delta=args,
        )  # fmt: skip
        done = {**item, "arguments": args, "status": "completed"}
        items.append(done)
        yield _event(
            "response.output_item.done", sequence_number=next(seq), output_index=index, item=done
        )
    if not turn.calls:
        mid = _id("msg_")
        item = {"type": "message", "id": mid, "role": "assistant", "status": "in_progress",
                "content": []}  # fmt: skip
        part = {"type": "output_text", "text": "", "annotations": []}
        done_part = {**part, "text": turn.text}
        done = {**item, "status": "completed", "content": [done_part]}
        at = {"item_id": mid, "output_index": 0, "content_index": 0}
        yield _event("response.output_item.added", sequence_number=next(seq), output_index=0,
                     item=item)  # fmt: skip
        yield _event("response.content_part.added", sequence_number=next(seq), **at, part=part)
        yield _event("response.output_text.delta", sequence_number=next(seq), **at,
                     delta=turn.text)  # fmt: skip
        yield _event("response.output_text.done", sequence_number=next(seq), **at,
                     text=turn.text)  # fmt: skip
        yield _event("response.content_part.done", sequence_number=next(seq), **at,
                     part=done_part)  # fmt: skip
        yield _event("response.output_item.done", sequence_number=next(seq), output_index=0,
                     item=done)  # fmt: skip
        items.append(done)
    usage = {
        "input_tokens": 100, "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 20, "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 120,
    }  # fmt: skip
    completed = {**response, "status": "completed", "output": items, "usage": usage}
    yield _event("response.completed", sequence_number=next(seq), response=completed)
