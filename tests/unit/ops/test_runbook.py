"""ops/runbook.md explains exactly the exit codes and coverage reasons the code defines.

The code holds each table once (``store/exits.py``, ``store/reasons.py``); the runbook's §4
and §5 tables must name the same codes and reasons, each reason under its group.
"""

from __future__ import annotations

import re
from pathlib import Path

from store.exits import MEANINGS
from store.reasons import FILES, LIMITS, QUERY, REASONS

RUNBOOK = Path(__file__).resolve().parents[3] / "ops" / "runbook.md"


def _section(text: str, heading: str) -> str:
    start = text.index(heading)
    end = text.find("\n## ", start + len(heading))
    return text[start : end if end >= 0 else len(text)]


def _first_cells(table_text: str) -> list[str]:
    """The first cell of each body row of the first table in *table_text*."""
    rows = [line for line in table_text.splitlines() if line.startswith("|")]
    return [row.split("|")[1].strip() for row in rows[2:]]


def _names(cell: str) -> list[str]:
    """The reasons a first cell names: backquoted, before any parenthesis (which may quote
    what status or the log show for it)."""
    return re.findall(r"`([a-z_]+)`", cell.split("(")[0])


def test_the_exit_code_table_is_the_code_table() -> None:
    section = _section(RUNBOOK.read_text(), "## 4. Exit codes")
    codes = [int(cell) for cell in _first_cells(section)]
    assert sorted(codes) == sorted(MEANINGS)


def test_every_reason_is_explained_under_its_group_and_nothing_else() -> None:
    section = _section(RUNBOOK.read_text(), "## 5. Coverage reasons")
    documented: dict[str, str] = {}
    for group in (FILES, LIMITS, QUERY):
        heading = f"**{group}**"
        assert heading in section, heading
        table = section[section.index(heading) :]
        for cell in _first_cells(table[: table.find("\n\n", table.index("|"))]):
            for name in _names(cell):
                assert name not in documented, f"{name} is explained twice"
                documented[name] = group
    assert documented == REASONS


def test_the_parser_reads_a_cell_as_the_runbook_writes_it() -> None:
    cell = "`disk_full` (status `disk FULL`, worker state `disk_full`, event `disk.full`)"
    assert _names(cell) == ["disk_full"]
    assert _names("`regex_max_haystack_terms`, `regex_max_haystack_bytes`") == [
        "regex_max_haystack_terms",
        "regex_max_haystack_bytes",
    ]
