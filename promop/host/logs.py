"""Structured logs (logfmt or JSON), one format for every promop command.

Call sites pass fields as `extra={"kv": {...}}` (see `fields`); the formatter
puts them after `level`, `ts`, `logger` and `msg`. Values are never Secret
content: promop logs object names, not data.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any, Mapping, TextIO

LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warn": logging.WARNING, "error": logging.ERROR}
_LEVEL_NAMES = {logging.DEBUG: "debug", logging.INFO: "info", logging.WARNING: "warn", logging.ERROR: "error",
                logging.CRITICAL: "error"}


def fields(**kv: Any) -> dict:
    """`log.info("synced", **fields(key=k))` -> the `extra` that carries structured fields."""
    return {"extra": {"kv": kv}}


def _record_fields(record: logging.LogRecord) -> dict[str, Any]:
    message = record.getMessage()
    out: dict[str, Any] = {
        "level": _LEVEL_NAMES.get(record.levelno, record.levelname.lower()),
        "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
        "logger": record.name,
        "msg": message,
    }
    extra = getattr(record, "kv", None)
    if isinstance(extra, Mapping):
        out.update(extra)
    if record.exc_info:
        out["err"] = logging.Formatter().formatException(record.exc_info).splitlines()[-1]
    return out


def _logfmt_value(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str, sort_keys=True)
    if text == "" or any(c in text for c in ' ="\\\n\t'):
        return json.dumps(text)
    return text


class LogfmtFormatter(logging.Formatter):
    """`level=info ts=... logger=promop.operator msg="synced" key=ns/name`."""

    def format(self, record: logging.LogRecord) -> str:
        return " ".join(f"{k}={_logfmt_value(v)}" for k, v in _record_fields(record).items())


class JsonFormatter(logging.Formatter):
    """One JSON object per line with the same keys as logfmt."""

    def format(self, record: logging.LogRecord) -> str:
        return json.dumps(_record_fields(record), default=str)


def setup(level: str = "info", fmt: str = "logfmt", stream: TextIO | None = None) -> logging.Handler:
    """Route the root logger to `stream` (stderr) in `fmt`; returns the handler (tests remove it)."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else LogfmtFormatter())
    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, "_promop", False)]:
        root.removeHandler(old)
    handler._promop = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(LEVELS.get(level, logging.INFO))
    # urllib3 retries log at WARNING with full URLs; our own retry logs say the same thing once.
    logging.getLogger("urllib3").setLevel(logging.ERROR)
    return handler
