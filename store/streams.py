"""Standard output that prints any file name, whatever the locale.

A file name that is not UTF-8 reaches us as an ``os.fsdecode`` string with lone surrogates.
Python writes those back as the original bytes only under the C/POSIX locale; under
``en_US.UTF-8`` its strict handler raises mid-listing. Both commands print the name's own
bytes instead, as ``ls`` and ``find`` do, so a pipe into ``xargs`` still names the file.
"""

from __future__ import annotations

import io
import sys

__all__ = ["print_file_names_as_bytes"]


def print_file_names_as_bytes() -> None:
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper) and stream.errors != "surrogateescape":
            stream.reconfigure(errors="surrogateescape")
