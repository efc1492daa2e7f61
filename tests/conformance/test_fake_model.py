"""The scripted fake model on its own (pure Python, loopback only: runs in the default suite)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conformance.fake_model import MAX_OVERRUNS, OVERRUN_TEXT, FakeModel, Turn


@pytest.fixture
def model() -> Iterator[FakeModel]:
    server = FakeModel()
    yield server
    server.close()


def post(model: FakeModel, path: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    """The ``data:`` payloads of one streamed answer (``[DONE]`` left out)."""
    request = urllib.request.Request(
        model.url + path, data=json.dumps(body).encode(), method="POST",
        headers={"Content-Type": "application/json"},
    )  # fmt: skip
    with urllib.request.urlopen(request, timeout=30) as reply:
        lines = reply.read().decode().splitlines()
    data = [x[len("data: ") :] for x in lines if x.startswith("data: ")]
    return [json.loads(x) for x in data if x != "[DONE]"]


def test_chat_completions_streams_the_scripted_tool_call_then_the_answer(model: FakeModel) -> None:
    model.load([Turn.tool("bash", command="exit 3"), Turn.say("done")])
    first = post(model, "/v1/chat/completions", {"stream": True})
    calls = [c["delta"]["tool_calls"][0] for x in first for c in x["choices"]
             if "tool_calls" in c["delta"]]  # fmt: skip
    assert calls[0]["function"]["name"] == "bash"
    assert json.loads(calls[1]["function"]["arguments"]) == {"command": "exit 3"}
    assert first[-1]["usage"]["total_tokens"] == 120
    second = post(model, "/v1/chat/completions", {"stream": True})
    text = "".join(c["delta"].get("content", "") for x in second for c in x["choices"])
    assert text == "done"
    assert model.remaining == 0 and model.overruns == 0


def test_messages_stream_ends_a_tool_turn_with_tool_use(model: FakeModel) -> None:
    model.load([Turn.tool("Bash", command="ls")])
    events = post(model, "/v1/messages?beta=true", {"stream": True})
    kinds = [e["type"] for e in events]
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
    block = next(e for e in events if e["type"] == "content_block_start")["content_block"]
    assert block["type"] == "tool_use" and block["name"] == "Bash"
    stop = next(e for e in events if e["type"] == "message_delta")["delta"]["stop_reason"]
    assert stop == "tool_use"


def test_responses_sends_an_mcp_tool_in_its_namespace(model: FakeModel) -> None:
    tools = [{"type": "namespace", "name": "mcp__needle", "tools": [{"name": "lookup"}]}]
    model.load([Turn.tool("mcp__needle__lookup", word="x")])
    events = post(model, "/v1/responses", {"stream": True, "tools": tools})
    item = next(e for e in events if e["type"] == "response.output_item.done")["item"]
    assert (item["namespace"], item["name"]) == ("mcp__needle", "lookup")
    assert events[-1]["type"] == "response.completed"


def test_an_exhausted_script_answers_a_final_text_then_refuses(model: FakeModel) -> None:
    model.load([])
    for n in range(1, MAX_OVERRUNS + 1):
        events = post(model, "/v1/chat/completions", {"stream": True})
        text = "".join(c["delta"].get("content", "") for x in events for c in x["choices"])
        assert text == OVERRUN_TEXT and model.overruns == n
    with pytest.raises(urllib.error.HTTPError) as refused:
        post(model, "/v1/chat/completions", {"stream": True})
    assert refused.value.code == 400
    refused.value.close()
