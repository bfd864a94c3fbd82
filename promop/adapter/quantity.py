"""Kubernetes quantities and times as the metrics APIs print them.

`value` in custom/external metrics is `resource.NewMilliQuantity(int64(v*1000),
DecimalSI)`: truncated to milli-units (NaN → 0), canonical form (`33m`, `2`,
`1500`, `2k`). Memory in metrics.k8s.io is `NewQuantity(int64(bytes), BinarySI)`
(`34Mi`, `1500`, `1k` below 1024). Times are RFC 3339 in seconds, UTC.
"""

from __future__ import annotations

import math
from datetime import datetime, timezone

_INT64_MAX = 2**63 - 1
_INT64_MIN = -(2**63)
_DECIMAL = {-3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}
_BINARY = {0: "", 10: "Ki", 20: "Mi", 30: "Gi", 40: "Ti", 50: "Pi", 60: "Ei"}


def _to_int64(v: float) -> int:
    if math.isnan(v):
        return 0
    if v >= _INT64_MAX:
        return _INT64_MAX
    if v <= _INT64_MIN:
        return _INT64_MIN
    return int(v)  # truncation toward zero, as Go's conversion


def _decimal(n: int, exponent: int) -> str:
    """n × 10^exponent in DecimalSI canonical form (exponent a multiple of 3)."""
    if n == 0:
        return "0"
    while n % 1000 == 0 and exponent < 18:
        n //= 1000
        exponent += 3
    return f"{n}{_DECIMAL[exponent]}"


def milli_quantity(value: float) -> str:
    """The canonical string of NewMilliQuantity(int64(value*1000), DecimalSI)."""
    return _decimal(_to_int64(value * 1000.0), -3)


def binary_quantity(value: float) -> str:
    """The canonical string of NewQuantity(int64(value), BinarySI)."""
    n = _to_int64(value)
    if -1024 < n < 1024:
        return _decimal(n, 0)
    exponent = 0
    while n % 1024 == 0 and exponent < 60:
        n //= 1024
        exponent += 10
    return f"{n}{_BINARY[exponent]}"


def rfc3339(ts: float) -> str:
    """metav1.Time's JSON form: seconds precision, UTC, `Z`."""
    return datetime.fromtimestamp(int(math.floor(ts)), tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def go_duration(seconds: float) -> str:
    """time.Duration.String(): `5m0s`, `30s`, `1h0m0s`, `1.5s`, `0s`."""
    ns = int(round(seconds * 1e9))
    if ns == 0:
        return "0s"
    sign = "-" if ns < 0 else ""
    ns = abs(ns)
    if ns < 1_000_000_000:
        for unit, size in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
            if ns >= size:
                return sign + _frac(ns, size) + unit
    h, rem = divmod(ns, 3600 * 10**9)
    m, rem = divmod(rem, 60 * 10**9)
    s = _frac(rem, 10**9) + "s"
    if h:
        return f"{sign}{h}h{m}m{s}"
    if m:
        return f"{sign}{m}m{s}"
    return sign + s


def _frac(n: int, unit: int) -> str:
    whole, rest = divmod(n, unit)
    if not rest:
        return str(whole)
    digits = str(rest).rjust(len(str(unit)) - 1, "0").rstrip("0")
    return f"{whole}.{digits}"
