"""Structured log fields for the runtime's log calls.

promop's log formatters (promop.host.logs) render `extra={"kv": {...}}`
as logfmt or JSON fields after `msg`; the message itself stays a plain
sentence. None values are left out; exceptions become their text.
"""

from __future__ import annotations

from typing import Any


def kv(**fields: Any) -> dict:
    """The `extra` of a log call: `log.info("synced", extra=kv(informer=name, objects=3))`."""
    return {"kv": {k: (str(v) if isinstance(v, BaseException) else v) for k, v in fields.items() if v is not None}}
