"""KEDA's metric values as Kubernetes quantities (`quantityFromFloat64`, v2.20.2).

Why its own module: the HPA target (the trigger threshold), the value served to the HPA and the
fallback value all go through the same conversion, and KEDA's clamping of NaN, ±Inf and negative
values to 0 (#7475, #7880) must be the same on every path.
"""

from __future__ import annotations

import math
from decimal import Decimal

from promop.quantity import format_milli


def clamp_metric(value: float) -> float:
    """NaN, ±Inf and negative values become 0 (KEDA 2.20.2); any other value is kept."""
    if math.isnan(value) or math.isinf(value) or value < 0:
        return 0.0
    return value


def milli_quantity(value: float) -> str:
    """A metric value as the quantity KEDA serves and targets: `resource.MustParse("%.3f")` of the
    clamped value, printed canonically (`2` -> `2`, `0.5` -> `500m`, `9.3344` -> `9334m`,
    `1500` -> `1500`, `2000` -> `2k`)."""
    return format_milli(milli_value_of(value))


def milli_value_of(value: float) -> int:
    """The clamped value rounded as `%.3f` rounds it, in milli units (exact: Decimal, no float error)."""
    return int(Decimal("%.3f" % clamp_metric(value)) * 1000)
