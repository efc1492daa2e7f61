"""Long-lived query processes follow a change feed; a one-shot CLI call does not pay for one."""

from __future__ import annotations

from pathlib import Path

import pytest

from query.mcp import _live_backend
from query.server import QueryServer
from query.transport import Backend
from tests.helpers import PiRoot
from tests.unit.query.kit import has_inotify


@pytest.mark.skipif(not has_inotify(), reason="inotify is not available here")
def test_serve_and_mcp_engines_have_a_feed_and_the_cli_backend_does_not(tmp_path: Path) -> None:
    config = PiRoot(tmp_path).write_config()
    server = QueryServer(config)
    mcp = _live_backend(config, "off")
    cli = Backend(config, server="off")
    try:
        assert server.engine.changes is not None
        assert mcp.engine.changes is not None
        assert cli.engine.changes is None
    finally:
        server.engine.close()
        mcp.close()
        cli.close()
