"""Go's time arithmetic the model needs: Time.Round and Duration.Truncate, RFC 3339 times, durations in seconds."""

from __future__ import annotations

import math
from datetime import datetime, timezone

from promop.duration import parse_duration as parse_duration_ms
from promop.duration import parse_go_seconds

# Seconds from Go's zero time (0001-01-01T00:00:00Z) to the Unix epoch: Time.Round counts from there.
ZERO_TIME = -62135596800.0

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


def parse_duration(value: object) -> float:
    """A Go duration (`24h`, `1h30m`, `5m`; time.ParseDuration, as upstream's flags), or a YAML number of seconds."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if not isinstance(value, str):
        raise ValueError(f"{value!r} is not a duration (e.g. 24h, 90m, 5m30s)")
    return parse_go_seconds(value)


def parse_prom_duration(text: object) -> float:
    """A Prometheus duration (`8d`, `1h`; model.ParseDuration, as upstream reads --history-length), in seconds."""
    return parse_duration_ms(text) / 1000


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
