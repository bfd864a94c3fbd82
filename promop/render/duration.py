"""Prometheus durations (`30s`, `1h30m`, `0`) and byte sizes (`10MB`), parsed as Prometheus does.

Prometheus refuses a config with a malformed duration, so the renderer checks
every duration it copies into the config.
"""

from __future__ import annotations

import re

_DURATION = re.compile(
    r"^(?:(\d+)y)?(?:(\d+)w)?(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?(?:(\d+)ms)?$"
)
_UNITS_MS = (365 * 86400_000, 7 * 86400_000, 86400_000, 3600_000, 60_000, 1000, 1)

_SIZE = re.compile(r"^(?:0|(\d*\.?\d+)([KMGTPE]i?)?B)$")
_SIZE_UNITS = {"": 1}
for _i, _u in enumerate("KMGTPE", start=1):
    _SIZE_UNITS[_u] = 1000**_i
    _SIZE_UNITS[_u + "i"] = 1024**_i


class DurationError(ValueError):
    """A duration or size string Prometheus would refuse."""


def parse_duration(text: object) -> int:
    """Milliseconds in a Prometheus duration such as `1m30s`; raises DurationError."""
    if not isinstance(text, str):
        raise DurationError(f"{text!r} is not a duration string; use a form like 30s, 1m or 1h30m")
    if text == "0":
        return 0
    m = _DURATION.match(text)
    if not text or not m:
        raise DurationError(
            f"{text!r} is not a valid duration; use integers with units y, w, d, h, m, s, ms in that order, e.g. 30s or 1h30m"
        )
    return sum(int(v) * unit for v, unit in zip(m.groups(), _UNITS_MS) if v)


def parse_size(text: object) -> int:
    """Bytes in a Prometheus byte size such as `10MB` or `1GiB`; raises DurationError."""
    if not isinstance(text, str):
        raise DurationError(f"{text!r} is not a size string; use a form like 10MB or 1GiB")
    m = _SIZE.match(text)
    if not m:
        raise DurationError(f"{text!r} is not a valid size; use a number and a unit such as 512KB, 10MB or 1GiB")
    if text == "0":
        return 0
    return int(float(m.group(1)) * _SIZE_UNITS[m.group(2) or ""])
