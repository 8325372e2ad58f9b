"""structlog configuration: one line per event to stderr, JSON or key=value.

JSON unless stderr is a terminal; ``LOCKWRIGHT_LOG_FORMAT=json|console`` says otherwise.
Records of the standard library's loggers (Temporal's workflow and activity loggers among
them) are rendered the same way, with the Temporal context they carry (workflow id, run
id, ...) and the ``kind``, ``package`` and ``revision`` a workflow passes in ``extra``
lifted into fields. Fields bound with ``structlog.contextvars`` (the worker binds the
running activity's ids, package and revision) go onto every line of both.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import MutableMapping
from typing import Any, TextIO

import structlog
from structlog.typing import Processor

JSON, CONSOLE = "json", "console"
FORMATS = (JSON, CONSOLE)
# Fields a workflow's log call may pass in ``extra``.
EXTRA_FIELDS = ("kind", "package", "revision")
# What the Temporal SDK's loggers put in ``extra``, and the field each becomes.
_TEMPORAL_EXTRA = {
    "temporal_workflow": {"workflow_id": "workflow_id", "run_id": "run_id",
                          "workflow_type": "workflow_type", "update_name": "update"},
    "temporal_activity": {"workflow_id": "workflow_id", "workflow_run_id": "run_id",
                          "activity_type": "activity", "attempt": "attempt"},
}


def log_format(value: str | None = None, stream: TextIO | None = None) -> str:
    """The format to log in: ``value``, else ``$LOCKWRIGHT_LOG_FORMAT``, else by terminal.

    Without either naming ``json`` or ``console``, JSON unless ``stream`` (default stderr)
    is a terminal.
    """
    chosen = (value or os.environ.get("LOCKWRIGHT_LOG_FORMAT", "")).strip().lower()
    if chosen in FORMATS:
        return chosen
    stream = stream or sys.stderr
    return CONSOLE if stream.isatty() else JSON


def temporal_fields(_: Any, __: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """A standard library record's Temporal context and workflow ``extra`` as fields.

    The record's own beat fields bound in the context, as a structlog call's do.
    """
    record = event.get("_record")
    for key, names in _TEMPORAL_EXTRA.items():
        context = getattr(record, key, None) or {}
        event.update({field: context[source] for source, field in names.items()
                      if source in context})
    event.update({field: getattr(record, field) for field in EXTRA_FIELDS
                  if hasattr(record, field)})
    return event


def _rendering(fmt: str) -> list[Processor]:
    if fmt == JSON:
        return [structlog.processors.format_exc_info, structlog.processors.JSONRenderer()]
    return [structlog.dev.ConsoleRenderer(colors=False)]  # renders exceptions itself


def _common() -> list[Processor]:
    return [structlog.contextvars.merge_contextvars, structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True)]


def stdlib_formatter(fmt: str) -> logging.Formatter:
    """Renders standard library records as structlog renders its events, in ``fmt``."""
    return structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[*_common(), structlog.stdlib.add_logger_name, temporal_fields],
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                    *_rendering(fmt)])


def configure(level: str | None = None, fmt: str | None = None) -> None:
    """Configure structlog and the standard library's root logger for a process.

    Args:
        level: the lowest level logged (default ``$LOCKWRIGHT_LOG_LEVEL``, else info).
        fmt: ``json`` or ``console`` (default: see :func:`log_format`).
    """
    level = (level or os.environ.get("LOCKWRIGHT_LOG_LEVEL", "info")).upper()
    fmt = log_format(fmt)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(stdlib_formatter(fmt))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    structlog.configure(
        processors=[*_common(), *_rendering(fmt)],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level)),
        # One write per line, so lines from both kinds of logger never interleave.
        logger_factory=structlog.WriteLoggerFactory(sys.stderr),
        cache_logger_on_first_use=True,
    )
