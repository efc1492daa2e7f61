"""The MCP tools in-process: the CLI's time forms, and results that fit the declared output
schemas (issue 20)."""

from __future__ import annotations

import jsonschema
import pytest

from query.mcp import TOOLS, call_tool
from query.transport import Backend
from tests.helpers import bash, header, user
from tests.unit.query.kit import CWD, T0, Kit


@pytest.fixture
def backend(kit: Kit) -> Backend:
    kit.session(
        "s",
        [
            header("s", CWD),
            user("u", None, "the flaky needle test", T0),
            bash("b", "u", "pytest", "1 failed", T0 + 60_000, exit_code=1),
        ],
    )
    kit.build()
    return Backend(kit.config, server="off")


def test_since_and_until_take_the_cli_forms(backend: Backend) -> None:
    with backend:
        by_ms, failed = call_tool(
            backend, "memory_recall", {"query": "needle", "since": T0 - 1}, cwd=CWD
        )
        assert not failed and by_ms["total"] == 1
        by_date, failed = call_tool(
            backend,
            "memory_recall",
            {"query": "needle", "since": "2023-11-13", "until": "2023-11-15"},
            cwd=CWD,
        )
        assert not failed and by_date["total"] == 1
        recent, failed = call_tool(
            backend, "memory_recall", {"query": "needle", "since": "7d"}, cwd=CWD
        )
        assert not failed and recent["total"] == 0  # T0 is 2023: long before the last week
        bad, failed = call_tool(backend, "memory_recall", {"since": "whenever"}, cwd=CWD)
        assert failed and bad["error"]["code"] == "invalid_argument"
        assert "since" in bad["error"]["message"]


def test_every_tool_declares_an_output_schema_its_results_fit(backend: Backend) -> None:
    calls = {
        "memory_recall": {"query": "needle", "scope": "global"},
        "memory_expand": {"session": "s", "indices": [0]},
        "memory_sessions": {"scope": "global"},
        "memory_catalog": {"scope": "global"},
    }
    with backend:
        for name, args in calls.items():
            tool = TOOLS[name]
            assert tool.output is not None
            jsonschema.Draft202012Validator.check_schema(tool.output)
            result, failed = call_tool(backend, name, args, cwd=CWD)
            assert not failed, result
            jsonschema.validate(result, tool.output)
        # an answered failure fits too
        missing, _ = call_tool(backend, "memory_expand", {"session": "nobody"}, cwd=CWD)
        jsonschema.validate(missing, TOOLS["memory_expand"].output)
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate({"hits": []}, TOOLS["memory_recall"].output)
