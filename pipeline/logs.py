"""Logging, configured once per process at its entry point.

Logs go to stderr (stdout stays clean for ``--json``): JSON lines when stderr is not a
terminal, pretty console lines when it is. Events are dotted nouns with a verb:
``index.started``, ``session.failed``, ``generation.published``.
"""

from __future__ import annotations

import logging
import sys

import structlog

__all__ = ["configure_logging"]


def configure_logging(*, json: bool | None = None, level: int = logging.INFO) -> None:
    json = (not sys.stderr.isatty()) if json is None else json
    renderer: list[structlog.types.Processor] = (
        [structlog.processors.dict_tracebacks, structlog.processors.JSONRenderer()]
        if json
        else [structlog.dev.ConsoleRenderer()]
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            *renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
        cache_logger_on_first_use=False,
    )
