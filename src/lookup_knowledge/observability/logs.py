"""Logs: JSON lines for machines, readable lines for a terminal, with the current request id.

`LOG_FORMAT=auto` (the default) writes console lines when stderr is a terminal and JSON lines
otherwise (a container, a file, a log shipper). Either way one record is one line, apart from
a traceback, and the request id of the current request is attached.
"""

from __future__ import annotations

import json
import logging
import sys
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any, Literal

import orjson

request_id_var: ContextVar[str | None] = ContextVar("request_id", default=None)

LogFormat = Literal["auto", "json", "console"]

# LogRecord's own attributes, and uvicorn's ANSI-coloured duplicate of the message.
_STANDARD = set(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {
    "message",
    "asctime",
    "color_message",
}
# Libraries that log a line per request or per start-up step at INFO: quiet unless DEBUG.
QUIET_LIBRARIES = ("httpx", "httpcore", "asyncio", "multipart", "bm25s", "jieba", "mcp", "sse")


def _extras(record: logging.LogRecord) -> dict[str, Any]:
    data: dict[str, Any] = {}
    request_id = request_id_var.get()
    if request_id:
        data["request_id"] = request_id
    for key, value in record.__dict__.items():
        if key not in _STANDARD and not key.startswith("_"):
            data[key] = value
    return data


class JsonFormatter(logging.Formatter):
    """`{"ts", "level", "logger", "message", "request_id", ...extra}` on one line."""

    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            **_extras(record),
        }
        if record.exc_info:
            data["exc_info"] = self.formatException(record.exc_info)
        try:  # one line per lookup at INFO: the fast encoder first
            return orjson.dumps(data, default=str).decode()
        except TypeError:  # a key that is not text, a lone surrogate
            return json.dumps(data, ensure_ascii=False, default=str)


class ConsoleFormatter(logging.Formatter):
    """`15:53:51.123 INFO    logger: message  key=value ...` for people at a terminal."""

    def format(self, record: logging.LogRecord) -> str:
        moment = datetime.fromtimestamp(record.created).strftime("%H:%M:%S.%f")[:-3]
        line = f"{moment} {record.levelname:<7} {record.name}: {record.getMessage()}"
        extras = _extras(record)
        if extras:
            line += "  " + " ".join(f"{key}={value}" for key, value in extras.items())
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


def resolve_format(log_format: LogFormat) -> Literal["json", "console"]:
    if log_format == "auto":
        return "console" if sys.stderr.isatty() else "json"
    return log_format


def configure_logging(level: str, log_format: LogFormat = "auto") -> None:
    """One handler on stderr for the service's loggers and uvicorn's; libraries kept quiet."""
    handler = logging.StreamHandler()
    formatter = JsonFormatter() if resolve_format(log_format) == "json" else ConsoleFormatter()
    handler.setFormatter(formatter)
    handler.setLevel(level)  # libraries that set their own loggers to DEBUG stay quiet
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logger = logging.getLogger(name)
        logger.handlers[:] = []
        logger.propagate = True
    # One line per lookup is ours; uvicorn's access line would repeat it without the ids.
    logging.getLogger("uvicorn.access").setLevel(logging.WARNING)
    library_level = logging.DEBUG if level == "DEBUG" else logging.WARNING
    for name in QUIET_LIBRARIES:
        logging.getLogger(name).setLevel(library_level)
    # Neither format prints the caller, thread or process, so no record looks them up: walking
    # the stack for the caller was a third of a lookup's log line (the logging HOWTO's
    # "Optimization"; docs/performance.md#hot-path).
    logging._srcfile = None
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False
