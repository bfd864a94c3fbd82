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
