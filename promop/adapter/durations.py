"""Go `time.ParseDuration` for command-line flags (`10m`, `1m30s`, `500ms`, `1.5h`)."""

from __future__ import annotations

import re

_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_UNIT = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_go_duration(text: str) -> float:
    """Seconds; raises ValueError naming the text."""
    s = text.strip()
    sign = -1.0 if s.startswith("-") else 1.0
    s = s.lstrip("+-")
    if s == "0":
        return 0.0
    pos = 0
    total = 0.0
    while pos < len(s):
        m = _PART.match(s, pos)
        if not m:
            raise ValueError(f"invalid duration {text!r}: use a number and a unit (ns, us, ms, s, m, h), e.g. 10m or 1m30s")
        total += float(m.group(1)) * _UNIT[m.group(2)]
        pos = m.end()
    if not s:
        raise ValueError(f"invalid duration {text!r}")
    return sign * total
