"""`pipeline doctor`, `pipeline status` text and the exit codes `pipeline` shares with `query`
(issue 20)."""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
import structlog

from pipeline.catchup import catch_up
from pipeline.cli import main
from pipeline.doctor import diagnose, query_socket
from pipeline.status import collect_status, render_status
from query.transport import socket_path
from store.exits import EXIT_FAILED, EXIT_NO_INDEX, EXIT_NOT_AN_INDEX, EXIT_OK
from tests.helpers import PiRoot, header, user

T0 = 1_700_000_000_000


@pytest.fixture(autouse=True)
def _logging_kept() -> Iterator[None]:
    # `pipeline` main configures structlog to print to the sys.stderr of the moment, here
    # capsys's, closed after the test: later tests must not log into it
    saved = structlog.get_config()
    yield
    structlog.configure(**saved)


@pytest.fixture
def pi(tmp_path: Path) -> PiRoot:
    root = PiRoot(tmp_path)
    root.write_config(maxEntryChars=100)
    root.session("s", [header("s", "/work/p"), user("u", None, "long " * 60, T0)])
    return root


def cli(pi: PiRoot, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main([*argv, "--config", str(pi.config_path), "-q"])
    out, err = capsys.readouterr()
    return code, out, err


def test_doctor_fails_without_an_index_then_passes(
    pi: PiRoot, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = cli(pi, capsys, "doctor", "--json")
    report = orjson.loads(out)
    assert code == EXIT_FAILED and report["ok"] is False
    levels = {c["name"]: c["level"] for c in report["checks"]}
    assert levels["index"] == "fail" and levels["sources"] == "ok"
    catch_up(pi.write_config(maxEntryChars=100))
    code, out, _ = cli(pi, capsys, "doctor")
    assert code == EXIT_OK, out
    assert "ok    current" in out and "warn  pipeline" in out


def test_doctor_sees_a_changed_source_and_an_unreadable_root(
    pi: PiRoot, capsys: pytest.CaptureFixture[str]
) -> None:
    catch_up(pi.write_config(maxEntryChars=100))
    pi.session("t", [header("t", "/work/p"), user("u", None, "new one", T0)])
    checks = {c.name: c for c in diagnose(pi.write_config()).checks}
    assert checks["current"].level == "fail" and "1 new" in checks["current"].message
    if os.geteuid() != 0:  # root reads everything: the permission check cannot fail there
        pi.root.chmod(0)
        try:
            checks = {c.name: c for c in diagnose(pi.write_config()).checks}
            assert checks["sources"].level == "fail"
        finally:
            pi.root.chmod(0o700)


def test_doctor_finds_a_listening_query_server(pi: PiRoot) -> None:
    config = pi.write_config()
    assert query_socket(config.index_dir) == socket_path(config.index_dir)
    path = query_socket(config.index_dir)
    path.parent.mkdir(parents=True)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(os.fspath(path))
        server.listen(1)
        checks = {c.name: c for c in diagnose(config).checks}
    assert checks["query serve"].level == "ok"
    checks = {c.name: c for c in diagnose(config).checks}  # socket left behind, no listener
    assert (
        checks["query serve"].level == "warn" and "nothing answers" in checks["query serve"].message
    )


def test_status_counts_display_cuts_apart_from_gaps(pi: PiRoot) -> None:
    config = pi.write_config(maxEntryChars=100)
    catch_up(config)
    status = collect_status(config)
    assert status.incomplete == 0 and status.display_cut == 1
    text = render_status(status)
    assert "None" not in text and "journal     head -1" not in text
    assert "display     1 sessions" in text
    # ratios are rounded for people (the JSON keeps six decimals)
    assert re.search(r"\d\.\d{3,}", text) is None, text


def test_rebuild_refuses_a_folder_that_is_not_an_index(
    pi: PiRoot, capsys: pytest.CaptureFixture[str]
) -> None:
    pi.index.mkdir()
    (pi.index / "thesis.tex").write_text("precious")
    code, _, err = cli(pi, capsys, "rebuild")
    assert code == EXIT_NOT_AN_INDEX == 7
    assert "does not look like a sessiondex index" in err
    assert (pi.index / "thesis.tex").read_text() == "precious"


def test_only_no_index_is_four(pi: PiRoot, capsys: pytest.CaptureFixture[str]) -> None:
    from query.cli import main as query_main

    code = query_main(["recall", "x", "--config", str(pi.config_path), "--cwd", "/work/p"])
    capsys.readouterr()
    assert code == EXIT_NO_INDEX


def test_version_and_completion(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--version"])
    assert capsys.readouterr().out.startswith("sessiondex ")
    assert main(["completion", "bash"]) == 0
    script = capsys.readouterr().out
    assert "doctor" in script and "rebuild" in script
