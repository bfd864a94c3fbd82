"""model.ResourceAmount: int64 millicores or bytes, every conversion and scaling truncating like Go."""

from __future__ import annotations

import math

MAX_RESOURCE_AMOUNT = int(1e14)


def amount_from_float(x: float) -> int:
    """resourceAmountFromFloat: negative -> 0, above 1e14 (or +Inf) -> 1e14, else truncated toward zero."""
    if x < 0:
        return 0
    if x > MAX_RESOURCE_AMOUNT or math.isnan(x):
        return MAX_RESOURCE_AMOUNT
    return int(x)


def cpu_amount_from_cores(cores: float) -> int:
    return amount_from_float(cores * 1000.0)


def cores_from_cpu_amount(millicores: int) -> float:
    return float(millicores) / 1000.0


def memory_amount_from_bytes(b: float) -> int:
    return amount_from_float(b)


def scale_resource(amount: int, factor: float) -> int:
    return amount_from_float(float(amount) * factor)
