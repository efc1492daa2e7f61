"""An index another record format version wrote is refused, never misread, and rebuilt."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import msgpack
import pytest
import structlog

from pipeline.cli import main
from store.exits import EXIT_OK
from store.reader import open_snapshot
from store.schema import SCHEMA_VERSION
from tests.helpers import PiRoot, header, user

T0 = 1_700_000_000_000


@pytest.fixture(autouse=True)
def _logging_kept() -> Iterator[None]:
    # `pipeline` main points structlog at capsys's stderr, closed after the test
    saved = structlog.get_config()
    yield
    structlog.configure(**saved)


def _restamp(manifest: Path, version: int) -> None:
    envelope = msgpack.unpackb(manifest.read_bytes(), raw=False, strict_map_key=False)
    envelope[1] = version
    manifest.write_bytes(msgpack.packb(envelope, use_bin_type=True))


def test_an_index_of_another_record_version_is_refused_then_rebuilt(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = PiRoot(tmp_path)
    root.write_config()
    config = str(root.config_path)
    root.session("s", [header("s", "/w"), user("u", None, "words numbatterm", T0)])
    assert main(["run", "--once", "--config", config, "-q"]) == EXIT_OK
    # Given the manifest a build of another record format version wrote
    (manifest,) = (root.index / "manifests").iterdir()
    _restamp(manifest, SCHEMA_VERSION + 1)
    capsys.readouterr()
    # When this build runs on it, it stops and says what to do instead of misreading it
    assert main(["run", "--once", "--config", config, "-q"]) != EXIT_OK
    err = capsys.readouterr().err
    assert f"record schema {SCHEMA_VERSION + 1}" in err and "pipeline rebuild" in err
    # And `pipeline rebuild` derives the index again, readable by this build
    assert main(["rebuild", "--config", config, "-q"]) == EXIT_OK
    assert [s.session_id for s in open_snapshot(root.index).manifest.sessions] == ["s"]
