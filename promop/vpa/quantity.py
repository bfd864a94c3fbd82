"""resource.Quantity text as the recommender writes it: CPU as DecimalSI milli, memory as BinarySI bytes."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

_BIN = [("Ei", 1 << 60), ("Pi", 1 << 50), ("Ti", 1 << 40), ("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)]
_DEC_SUFFIX = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}
_PARSE = {"n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": Decimal(1), "k": Decimal("1e3"),
          "M": Decimal("1e6"), "G": Decimal("1e9"), "T": Decimal("1e12"), "P": Decimal("1e15"),
          "E": Decimal("1e18"), "Ki": Decimal(1 << 10), "Mi": Decimal(1 << 20), "Gi": Decimal(1 << 30),
          "Ti": Decimal(1 << 40), "Pi": Decimal(1 << 50), "Ei": Decimal(1 << 60)}
_QTY = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?$")


def format_millicores(m: int) -> str:
    """NewMilliQuantity(m, DecimalSI).String(): 587 -> '587m', 2000 -> '2', 1500 -> '1500m'."""
    if m == 0:
        return "0"
    exp = -3
    while m % 1000 == 0 and exp < 18:
        m //= 1000
        exp += 3
    return f"{m}{_DEC_SUFFIX[exp]}"


def format_bytes(b: int) -> str:
    """NewQuantity(b, BinarySI).String(): exact multiples of 1024 get Ki/Mi/Gi..., others stay plain."""
    if b == 0:
        return "0"
    for suffix, size in _BIN:
        if b % size == 0:
            return f"{b // size}{suffix}"
    return str(b)


def parse_quantity(text: object) -> Decimal:
    """'500m', '1.5', '512Mi', '1e3', or a number, as an exact Decimal; ValueError says what is wrong."""
    if isinstance(text, bool):
        raise ValueError(f"{text!r} is not a quantity")
    if isinstance(text, (int, float)):
        return Decimal(repr(text)) if isinstance(text, float) else Decimal(text)
    m = _QTY.match(str(text).strip())
    if not m:
        raise ValueError(f"{text!r} is not a quantity (e.g. 500m, 2, 512Mi)")
    try:
        return Decimal(m.group(1)) * _PARSE[m.group(2) or ""]
    except InvalidOperation:
        raise ValueError(f"{text!r} is not a quantity") from None


def millicores_of(text: object) -> int:
    """A CPU quantity as millicores, rounded up like Quantity.MilliValue."""
    q = parse_quantity(text) * 1000
    return int(q.to_integral_value(rounding="ROUND_CEILING"))


def bytes_of(text: object) -> int:
    """A memory quantity as bytes, rounded up like Quantity.Value."""
    return int(parse_quantity(text).to_integral_value(rounding="ROUND_CEILING"))
