"""Oh My Pi (``@oh-my-pi/pi-coding-agent``, CLI ``omp``): Pi's format (``stages.omp.source``)
under ``~/.omp/agent/sessions/<project folder>/<timestamp>_<id>.jsonl``, subagents in the
parent's artifacts folder ``<timestamp>_<id>/``. Appends take Pi's tail path, except one whose
shell result's exit code must be read against a call written before it."""

from __future__ import annotations

from stages.adapter import Adapter, Tail
from stages.omp.normalize import appends_locally, normalize_omp
from stages.omp.source import AGENT, read_omp
from stages.omp.tools import TOOLS, mcp_parts
from stages.pi.source import tail_ready
from store.sources import ABSOLUTE, HOME, TMPDIR, ProjectFolder, SessionFiles

__all__ = ["ADAPTER"]

# session-paths.ts getDefaultSessionDirName: a cwd under the home folder is "-<relative>"
# ("-" for home itself), under the temp folder "-tmp-<relative>" ("-tmp"), anywhere else
# "--<absolute>--" (Pi's form); "/", "\" and ":" become "-".
_FOLDERS = (
    ProjectFolder(HOME, prefix="-", bare="-"),
    ProjectFolder(TMPDIR, prefix="-tmp-", bare="-tmp"),
    ProjectFolder(ABSOLUTE, prefix="--", suffix="--"),
)

ADAPTER = Adapter(
    name=AGENT,
    default_root="~/.omp/agent/sessions",
    read=read_omp,
    normalize=normalize_omp,
    tools=TOOLS,
    mcp=mcp_parts,
    files=SessionFiles(("*.jsonl",)),
    folders=_FOLDERS,
    tail=Tail(ready=tail_ready, local=appends_locally),
)
