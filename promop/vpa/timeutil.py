"""Go's time arithmetic the model needs: Time.Round and Duration.Truncate, and RFC 3339 / Go durations."""

from __future__ import annotations

import math
import re
from datetime import datetime, timezone

# Seconds from Go's zero time (0001-01-01T00:00:00Z) to the Unix epoch: Time.Round counts from there.
ZERO_TIME = -62135596800.0

_DUR = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h|d|w)")
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0,
          "w": 604800.0}


def go_round(t: float, d: float) -> float:
    """Time.Round(d): nearest multiple of d since Go's zero time, halves up."""
    if d <= 0:
        return t
    a = t - ZERO_TIME
    r = math.fmod(a, d)
    if r < 0:
        r += d
    if r + r < d:
        return t - r
    return t + (d - r)


def truncate_duration(x: float, m: float) -> float:
    """Duration.Truncate(m): x rounded toward zero to a multiple of m."""
    if m <= 0:
        return x
    return x - math.fmod(x, m)


def parse_duration(text: str) -> float:
    """'24h', '1h30m', '8d', '90s' (Go's units plus d and w, as Prometheus has them), or plain seconds."""
    s = str(text).strip()
    try:
        return float(s)
    except ValueError:
        pass
    pos, total = 0, 0.0
    for m in _DUR.finditer(s):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if pos != len(s) or not s:
        raise ValueError(f"{text!r} is not a duration (e.g. 24h, 90m, 8d)")
    return total


def parse_time(value: object) -> float:
    """RFC 3339 text, a datetime, or Unix seconds, as Unix seconds."""
    if isinstance(value, datetime):
        dt = value if value.tzinfo else value.replace(tzinfo=timezone.utc)
        return dt.timestamp()
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        s = value.strip()
        if s.endswith(("Z", "z")):
            s = s[:-1] + "+00:00"
        try:
            dt = datetime.fromisoformat(s)
        except ValueError:
            raise ValueError(f"{value!r} is not an RFC 3339 time (e.g. 2026-01-08T00:00:00Z)") from None
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=timezone.utc)
        return dt.timestamp()
    raise ValueError(f"{value!r} is not a time")


def format_time(t: float) -> str:
    """Unix seconds as RFC 3339 UTC, seconds precision (metav1.Time's JSON form)."""
    return datetime.fromtimestamp(math.floor(t), timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
