"""The query CLI in-process: arguments become requests, results print, exit codes say why."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson
import pytest

from query.cli import main
from tests.helpers import bash, header, user
from tests.unit.query.kit import CWD, T0, Kit


@pytest.fixture
def indexed(kit: Kit) -> Kit:
    kit.session(
        "s",
        [
            header("s", CWD),
            user("u", None, "the flaky needle test", T0),
            bash("b", "u", "pytest", "1 failed", T0 + 60_000, exit_code=1),
        ],
    )
    kit.build()
    return kit


def run(kit: Kit, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main([*argv, "--config", str(kit.pi.config_path), "--cwd", CWD])
    out, err = capsys.readouterr()
    return code, out, err


def as_json(out: str) -> dict[str, Any]:
    value = orjson.loads(out)
    assert isinstance(value, dict)
    return value


def test_recall_json_is_the_seed_object(indexed: Kit, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(indexed, capsys, "recall", "needle", "--json")
    page = as_json(out)
    assert code == 0
    assert set(page) == {"total", "hits", "next", "coverage"}
    assert page["hits"][0]["snippet"] == "the flaky needle test"


def test_follow_tokens_run_verbatim(indexed: Kit, capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(indexed, capsys, "recall", "needle", "--json")
    token = orjson.dumps(as_json(out)["hits"][0]["follow"]).decode()
    code, out, _ = run(indexed, capsys, "call", token, "--json")
    assert code == 0 and as_json(out)["entries"][0]["text"] == "the flaky needle test"


def test_filters_and_times(indexed: Kit, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        indexed, capsys, "recall", "--tool", "bash", "--outcome", "failed", "--json",
        "--since", str(T0 + 1), "--until", "2100-01-01",
    )  # fmt: skip
    page = as_json(out)
    assert code == 0 and [h["index"] for h in page["hits"]] == [1]
    _, out, _ = run(indexed, capsys, "recall", "--since", str(T0 + 120_000), "--json")
    assert as_json(out)["hits"] == []


def test_expand_selectors(indexed: Kit, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(indexed, capsys, "expand", "s", "--indices", "0,1", "--json")
    assert code == 0 and [e["index"] for e in as_json(out)["entries"]] == [0, 1]
    code, out, _ = run(indexed, capsys, "expand", "s", "--range", "1:1", "--json")
    assert [e["index"] for e in as_json(out)["entries"]] == [1]
    code, out, _ = run(indexed, capsys, "expand", "s", "--operation-address", "b/bash", "--json")
    assert as_json(out)["entries"][0]["outcome"] == "failed"


def test_text_output_shows_the_way_on(indexed: Kit, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(indexed, capsys, "recall", "needle", "--text")
    assert code == 0
    assert "pi:s #0 user" in out and "query expand" in out and "coverage complete" in out
    _, out, _ = run(indexed, capsys, "expand", "s", "--indices", "1", "--text")
    assert "#1 bashExecution bash [failed]" in out
    _, out, _ = run(indexed, capsys, "sessions", "--text")
    assert "pi:s" in out


def test_exit_codes(indexed: Kit, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(indexed, capsys, "recall", "x", "--page-size", "99")
    assert code == 2 and "pageSize must be an integer in 1..50" in err
    code, _, err = run(indexed, capsys, "recall", "x", "--since", "whenever")
    assert code == 2 and "7d" in err
    code, _, err = run(indexed, capsys, "call", "{not json")
    assert code == 2 and "not valid JSON" in err
    code, _, err = run(indexed, capsys, "expand", "s", "--range", "3")
    assert code == 2 and "FIRST:LAST" in err
    code, out, _ = run(indexed, capsys, "expand", "nobody", "--indices", "0", "--json")
    assert code == 6 and as_json(out)["error"]["code"] == "session_not_found"
    empty = Kit(tmp_path / "empty")
    code, _, err = run(empty, capsys, "recall", "x")
    assert code == 4 and "pipeline run --once" in err


def test_default_output_is_json_when_piped(
    indexed: Kit, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(indexed, capsys, "sessions")
    sessions = as_json(out)["sessions"]
    assert code == 0 and sessions[0]["id"] == "pi:s" and sessions[0]["agent"] == "pi"
    assert sessions[0]["file"].endswith(os.sep + "s.jsonl")


def test_the_cli_loads_no_index_code_before_it_knows_it_needs_it() -> None:
    """A `query` call answered by `query serve` is mostly interpreter start and imports: the
    CLI module itself must not pull in the codec, zstd, msgpack, the record types or the
    engine (they cost ~15 ms of every call)."""
    import subprocess
    import sys

    heavy = ["store.codec", "store.records", "store.reader", "zstandard", "msgpack", "query.engine"]
    code = f"import sys, query.cli; print(','.join(m for m in {heavy!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
