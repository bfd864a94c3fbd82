"""Kubernetes quantities (`500m`, `1Gi`, `1.5e3`) as exact fractions, their integer views as upstream
rounds them, and their canonical text: one module for every pure core (the HPA's `promop.autoscale`,
the VPA's `promop.vpa`) and the controllers around them.

Upstream's `Quantity.MilliValue()` and `Quantity.Value()` round up (away from zero) when the quantity
has more precision than the unit; the HPA's replica calculator and the VPA's capping work on those
integers, so we do too.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

_QUANTITY = re.compile(r"^([+-]?)(\d+\.?\d*|\.\d+)(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E))?$")
_SUFFIX = {
    "": Fraction(1), "n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000),
    "k": Fraction(10**3), "M": Fraction(10**6), "G": Fraction(10**9), "T": Fraction(10**12),
    "P": Fraction(10**15), "E": Fraction(10**18),
    "Ki": Fraction(2**10), "Mi": Fraction(2**20), "Gi": Fraction(2**30), "Ti": Fraction(2**40),
    "Pi": Fraction(2**50), "Ei": Fraction(2**60),
}
_SI_SUFFIX = {-3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}
MAX_INT64 = 2**63 - 1


class QuantityError(ValueError):
    """Text that is not a Kubernetes quantity."""


def parse_quantity(value: object) -> Fraction:
    """The exact value of a quantity given as text (`500m`, `1Gi`) or a number."""
    if isinstance(value, bool):
        raise QuantityError(f"{value!r} is not a quantity; use a form like 500m, 2, 1.5 or 1Gi")
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise QuantityError(f"{value!r} is not a quantity")
        return Fraction(repr(value))
    if not isinstance(value, str):
        raise QuantityError(f"{value!r} is not a quantity; use a form like 500m, 2, 1.5 or 1Gi")
    m = _QUANTITY.match(value.strip())
    if not m:
        raise QuantityError(f"{value!r} is not a quantity; use a form like 500m, 2, 1.5 or 1Gi")
    sign, number, exponent, suffix = m.groups()
    result = Fraction(number)
    if exponent:
        if abs(int(exponent[1:])) > 1000:   # 10**1e9 would take the process down for a typo
            raise QuantityError(f"{value!r} is not a quantity: exponent out of range")
        result *= Fraction(10) ** int(exponent[1:])
    else:
        result *= _SUFFIX[suffix or ""]
    return -result if sign == "-" else result


def milli_value(value: object) -> int:
    """`Quantity.MilliValue()`: the value in milli-units, rounded away from zero."""
    q = parse_quantity(value) * 1000
    n = math.ceil(q) if q >= 0 else math.floor(q)
    return max(-MAX_INT64 - 1, min(MAX_INT64, n))


def int_value(value: object) -> int:
    """`Quantity.Value()`: the value in units (bytes for memory), rounded away from zero."""
    q = parse_quantity(value)
    n = math.ceil(q) if q >= 0 else math.floor(q)
    return max(-MAX_INT64 - 1, min(MAX_INT64, n))


def format_milli(milli: int) -> str:
    """`resource.NewMilliQuantity(milli, DecimalSI).String()`: the canonical form."""
    if milli == 0:
        return "0"
    exp = -3
    while milli % 1000 == 0 and exp < 18:
        milli //= 1000
        exp += 3
    return f"{milli}{_SI_SUFFIX[exp]}"


_BINARY = [("Ei", 1 << 60), ("Pi", 1 << 50), ("Ti", 1 << 40), ("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)]


def format_bytes(b: int) -> str:
    """`resource.NewQuantity(b, BinarySI).String()` (how the VPA writes memory): the largest binary suffix
    that keeps the number whole (`512Mi`, `1536Ki`), else plain bytes; below 1024 in magnitude upstream
    switches to DecimalSI (`1k` for 1000)."""
    if -1024 < b < 1024:
        return format_milli(b * 1000)
    for suffix, size in _BINARY:
        if b % size == 0:
            return f"{b // size}{suffix}"
    return str(b)


def approximate_float(value: object) -> float:
    """`Quantity.AsApproximateFloat64()`: mantissa times a power of ten, in float64 as Go computes it."""
    q = parse_quantity(value)
    exp = 0
    while q.denominator != 1:
        q *= 10
        exp -= 1
    mantissa = int(q)
    while exp < 0 and mantissa % 10 == 0:
        mantissa //= 10
        exp += 1
    base = float(mantissa)
    if exp == 0:
        return base
    return base * 10.0**exp if exp > 0 else base * (1.0 / 10.0**-exp)
