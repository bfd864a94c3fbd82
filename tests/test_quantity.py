"""promop.quantity: Kubernetes' resource.Quantity grammar, its integer views and canonical text.

Expectations from apimachinery's documented behaviour (`<signedNumber><suffix>` with a binary SI
suffix, a decimal SI suffix or a decimal exponent; MilliValue/Value round up away from zero;
String() canonical forms) and from the reference's VPA outputs (`587m`, plain bytes).
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from promop.quantity import QuantityError, approximate_float, format_bytes, format_milli, int_value, \
    milli_value, parse_quantity


@pytest.mark.parametrize("text,value", [
    ("500m", Fraction(1, 2)), ("2", Fraction(2)), ("1.5", Fraction(3, 2)), (".5", Fraction(1, 2)),
    ("1.", Fraction(1)), ("+3k", Fraction(3000)), ("-250m", Fraction(-1, 4)), ("1e3", Fraction(1000)),
    ("1E-3", Fraction(1, 1000)), ("12e+2", Fraction(1200)), ("100n", Fraction(1, 10**7)), ("5u", Fraction(5, 10**6)),
    ("1Ki", Fraction(1024)), ("512Mi", Fraction(512 << 20)), ("1.5Gi", Fraction(3 << 29)), ("2Ti", Fraction(2 << 40)),
    ("1Pi", Fraction(1 << 50)), ("1Ei", Fraction(1 << 60)), ("1M", Fraction(10**6)), ("3G", Fraction(3 * 10**9)),
    ("1T", Fraction(10**12)), ("1P", Fraction(10**15)), ("1E", Fraction(10**18)), (" 7 ", Fraction(7)),
    (3, Fraction(3)), (0.1, Fraction(1, 10)),
])
def test_parse(text, value):
    assert parse_quantity(text) == value


@pytest.mark.parametrize("text", ["", "m", "1.2.3", "1mi", "1 Mi", "1e3Mi", "1Ki5", "lots", "1e", "0x10", "1e99999",
                                  True, None, [1], float("nan"), float("inf")])
def test_not_a_quantity_is_one_clear_error(text):
    with pytest.raises(QuantityError) as e:
        parse_quantity(text)
    assert "is not a quantity" in str(e.value) and "\n" not in str(e.value)
    assert isinstance(e.value, ValueError)


@pytest.mark.parametrize("text,milli,value", [
    ("1", 1000, 1), ("100m", 100, 1), ("0.0001", 1, 1), ("1.0001m", 2, 1), ("-0.0001", -1, -1),
    ("-1.5m", -2, -1), ("512Mi", 536870912000, 536870912), ("2.5", 2500, 3), ("1n", 1, 1), ("0", 0, 0),
    ("9223372036854775807", 2**63 - 1, 2**63 - 1), ("10E", 2**63 - 1, 2**63 - 1),
])
def test_milli_value_and_value_round_away_from_zero(text, milli, value):
    assert milli_value(text) == milli
    assert int_value(text) == value


@pytest.mark.parametrize("milli,text", [(587, "587m"), (2000, "2"), (1500, "1500m"), (0, "0"), (25, "25m"),
                                        (10**14, "100G"), (12, "12m"), (-500, "-500m"), (3_000_000, "3k")])
def test_format_milli(milli, text):
    assert format_milli(milli) == text


@pytest.mark.parametrize("b,text", [(764046746, "764046746"), (629145600, "600Mi"), (131072000, "125Mi"),
                                    (1 << 30, "1Gi"), (1536 << 10, "1536Ki"), (0, "0"), (1000, "1k"), (500, "500"),
                                    (1023, "1023"), (1024, "1Ki"), (-2048, "-2Ki"), (10**14, "97656250000Ki")])
def test_format_bytes(b, text):
    assert format_bytes(b) == text


def test_approximate_float():
    assert approximate_float("1.5") == 1.5 and approximate_float("100m") == 0.1 and approximate_float("1Ki") == 1024.0
