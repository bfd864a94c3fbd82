"""Go-style durations ("3m", "1m30s", "500ms", "0"), so flags read like upstream's."""
from __future__ import annotations

import re

_UNITS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")


def parse_duration(text: str) -> float:
    """Return the duration in seconds; raise ValueError naming the bad input."""
    raw = text.strip()
    if raw in ("0", "+0", "-0"):
        return 0.0
    body = raw
    sign = 1.0
    if body[:1] in "+-" and body:
        sign = -1.0 if body[0] == "-" else 1.0
        body = body[1:]
    if not body:
        raise ValueError(f"invalid duration {text!r}: empty")
    total = 0.0
    pos = 0
    while pos < len(body):
        match = _PART.match(body, pos)
        if match is None:
            raise ValueError(
                f"invalid duration {text!r}: expected a number followed by a unit "
                f"(ns, us, ms, s, m, h), e.g. 3m, 1m30s or 500ms"
            )
        total += float(match.group(1)) * _UNITS[match.group(2)]
        pos = match.end()
    return sign * total


def format_duration(seconds: float) -> str:
    """Render seconds compactly for log lines (the inverse is not needed)."""
    if seconds == 0:
        return "0s"
    if seconds < 1:
        return f"{seconds * 1000:g}ms"
    return f"{seconds:g}s"
