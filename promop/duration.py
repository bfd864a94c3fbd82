"""Durations, one module for both grammars promop meets.

- Prometheus' `model.ParseDuration` / `model.Duration.String` for durations in
  CRDs and Prometheus/Alertmanager configs (`30s`, `1h30m`, `1d`, `0`): whole
  numbers, units y w d h m s ms in that order, each at most once. Values are int
  milliseconds (every unit is a whole number of them).
- Go's `time.ParseDuration` / `time.Duration.String` for command-line flags of
  the Go programs promop stands in for, re-exported from the top-level `gotime`
  package (shared with the standalone reloader). Values are int nanoseconds.

Also Prometheus' byte sizes (`units.Base2Bytes` as `storage.tsdb.retention.size`
reads them), which live beside durations in the same configs.
"""

from __future__ import annotations

import functools
import re

from gotime.duration import DurationError as GoDurationError
from gotime.duration import format_duration as format_go_duration
from gotime.duration import format_seconds as format_go_seconds
from gotime.duration import parse_duration as parse_go_duration
from gotime.duration import parse_seconds as parse_go_seconds

__all__ = [
    "DurationError", "GoDurationError", "format_duration", "format_go_duration", "format_go_seconds",
    "parse_duration", "parse_go_duration", "parse_go_seconds", "parse_size",
]

_DURATION = re.compile(
    r"(?:([0-9]+)y)?(?:([0-9]+)w)?(?:([0-9]+)d)?(?:([0-9]+)h)?(?:([0-9]+)m)?(?:([0-9]+)s)?(?:([0-9]+)ms)?"
)
_MS = (365 * 86400_000, 7 * 86400_000, 86400_000, 3600_000, 60_000, 1000, 1)
_NS_PER_MS = 1_000_000
_MAX_NS = (1 << 63) - 1
_FORMAT_UNITS = (("y", _MS[0], True), ("w", _MS[1], True), ("d", _MS[2], False), ("h", _MS[3], False),
                 ("m", _MS[4], False), ("s", _MS[5], False), ("ms", 1, False))

_SIZE = re.compile(r"(?:0|([0-9]*\.?[0-9]+)([KMGTPE]i?)?B)")
_SIZE_UNITS = {"": 1}
for _i, _u in enumerate("KMGTPE", start=1):
    _SIZE_UNITS[_u] = 1000**_i
    _SIZE_UNITS[_u + "i"] = 1024**_i


class DurationError(ValueError):
    """A duration or size string Prometheus would refuse."""


_HINT = "use whole numbers with units y, w, d, h, m, s, ms in that order, e.g. 30s or 1h30m"


def parse_duration(text: object) -> int:
    """Milliseconds in a Prometheus duration such as `1m30s`; raises DurationError.

    Exactly model.ParseDuration: `0` alone needs no unit, the empty string and
    anything past int64 nanoseconds (~292 years) are refused.
    """
    if not isinstance(text, str):
        raise DurationError(f"{text!r} is not a duration string; {_HINT}")
    return _parse_duration(text)


@functools.lru_cache(maxsize=4096)
def _parse_duration(text: str) -> int:
    """parse_duration of a str, memoised: every monitor's endpoints repeat the same few intervals
    (at 10,000 ServiceMonitors parsing them was ~0.1 s of the first render). Errors are raised
    afresh each time (lru_cache keeps only results)."""
    if text == "0":
        return 0
    if text == "":
        raise DurationError(f"empty duration string; {_HINT}")
    m = _DURATION.fullmatch(text)
    if not m:
        raise DurationError(f"not a valid duration string: {text!r}; {_HINT}")
    ms = sum(int(v) * unit for v, unit in zip(m.groups(), _MS) if v)
    if ms * _NS_PER_MS > _MAX_NS:
        raise DurationError(f"duration out of range: {text!r}; Prometheus durations stop at about 292 years")
    return ms


def format_duration(ms: int) -> str:
    """model.Duration.String: `90000` -> `1m30s`, `86400000` -> `1d`, `0` -> `0s`.

    Years and weeks only when they divide the whole (`90d`, not `12w6d`), as Prometheus prints them.
    """
    if ms == 0:
        return "0s"
    out = []
    for unit, mult, exact in _FORMAT_UNITS:
        if exact and ms % mult:
            continue
        value = ms // mult
        if value > 0:
            out.append(f"{value}{unit}")
            ms -= value * mult
    return "".join(out)


def parse_size(text: object) -> int:
    """Bytes in a Prometheus byte size such as `10MB` or `1GiB`; raises DurationError."""
    if not isinstance(text, str):
        raise DurationError(f"{text!r} is not a size string; use a form like 10MB or 1GiB")
    m = _SIZE.fullmatch(text)
    if not m:
        raise DurationError(f"{text!r} is not a valid size; use a number and a unit such as 512KB, 10MB or 1GiB")
    if text == "0":
        return 0
    return int(float(m.group(1)) * _SIZE_UNITS[m.group(2) or ""])
