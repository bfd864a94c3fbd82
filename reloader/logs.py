"""Structured logs: logfmt by default, JSON with --log-format=json.

Call sites pass fields as keyword arguments: `log.info("reload done", url=u)`.
"""
from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any

LEVELS = {
    "all": logging.DEBUG,
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warn": logging.WARNING,
    "error": logging.ERROR,
    "none": logging.CRITICAL + 10,
}
_NAMES = {logging.DEBUG: "debug", logging.INFO: "info", logging.WARNING: "warn", logging.ERROR: "error"}
LOGGER_NAME = "promop-config-reloader"


def _timestamp(created: float) -> str:
    seconds = int(created)
    micros = int((created - seconds) * 1_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{micros:06d}Z"


def _fields(record: logging.LogRecord) -> dict[str, Any]:
    out: dict[str, Any] = {
        "ts": _timestamp(record.created),
        "level": _NAMES.get(record.levelno, record.levelname.lower()),
        "msg": record.getMessage(),
    }
    out.update(getattr(record, "fields", {}) or {})
    return out


def _logfmt_value(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value) if isinstance(value, (list, dict)) else str(value)
    if text == "" or any(c in text for c in ' ="\\\n\t'):
        return json.dumps(text)
    return text


class LogfmtFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return " ".join(f"{k}={_logfmt_value(v)}" for k, v in _fields(record).items())


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return json.dumps(_fields(record), default=str)


class Log(logging.LoggerAdapter):
    """Adapter that turns keyword arguments into structured fields."""

    def _emit(self, level: int, msg: str, fields: dict[str, Any]) -> None:
        if self.logger.isEnabledFor(level):
            self.logger.log(level, msg, extra={"fields": fields})

    def debug(self, msg: str, **fields: Any) -> None:  # type: ignore[override]
        self._emit(logging.DEBUG, msg, fields)

    def info(self, msg: str, **fields: Any) -> None:  # type: ignore[override]
        self._emit(logging.INFO, msg, fields)

    def warning(self, msg: str, **fields: Any) -> None:  # type: ignore[override]
        self._emit(logging.WARNING, msg, fields)

    def error(self, msg: str, **fields: Any) -> None:  # type: ignore[override]
        self._emit(logging.ERROR, msg, fields)


def setup(fmt: str = "logfmt", level: str = "info", stream: Any = None) -> Log:
    """Configure the reloader's logger (stderr) and return it."""
    logger = logging.getLogger(LOGGER_NAME)
    logger.handlers.clear()
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else LogfmtFormatter())
    logger.addHandler(handler)
    logger.setLevel(LEVELS[level])
    logger.propagate = False
    return Log(logger, {})


def get() -> Log:
    return Log(logging.getLogger(LOGGER_NAME), {})
