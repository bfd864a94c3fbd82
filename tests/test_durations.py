"""Both duration grammars against their upstream tables.

Go: the cases of Go's time package `parseDurationTests`, `parseDurationErrorTests`
and `durationTests` (written here from their documented behaviour); Prometheus:
prometheus/common model's duration tests. Plus the differences issue 25 found in
our old copies (spaces, trailing newline, Unicode digits, `--5s`, `1µs`).
"""

from __future__ import annotations

import pytest

from gotime.duration import DurationError as GoError
from gotime.duration import format_duration as go_format
from gotime.duration import parse_duration as go_parse
from promop.duration import DurationError, format_duration, parse_duration, parse_size

NS, US, MS, S, MIN, H = 1, 1000, 10**6, 10**9, 60 * 10**9, 3600 * 10**9

GO_OK = [
    # simple
    ("0", 0), ("5s", 5 * S), ("30s", 30 * S), ("1478s", 1478 * S),
    # sign
    ("-5s", -5 * S), ("+5s", 5 * S), ("-0", 0), ("+0", 0),
    # decimal
    ("5.0s", 5 * S), ("5.6s", 5 * S + 600 * MS), ("5.s", 5 * S), (".5s", 500 * MS), ("1.0s", S),
    ("1.00s", S), ("1.004s", S + 4 * MS), ("1.0040s", S + 4 * MS), ("100.00100s", 100 * S + MS),
    # different units
    ("10ns", 10), ("11us", 11 * US), ("12µs", 12 * US), ("12μs", 12 * US), ("13ms", 13 * MS),
    ("14s", 14 * S), ("15m", 15 * MIN), ("16h", 16 * H),
    # composite
    ("3h30m", 3 * H + 30 * MIN), ("10.5s4m", 4 * MIN + 10 * S + 500 * MS), ("-2m3.4s", -(2 * MIN + 3 * S + 400 * MS)),
    ("1h2m3s4ms5us6ns", H + 2 * MIN + 3 * S + 4 * MS + 5 * US + 6), ("39h9m14.425s", 39 * H + 9 * MIN + 14 * S + 425 * MS),
    # large value
    ("52763797000ns", 52763797000),
    # more than 9 digits after the decimal point
    ("0.3333333333333333333h", 20 * MIN),
    # 9007199254740993 = 1<<53+1 cannot be stored precisely in a float64
    ("9007199254740993ns", (1 << 53) + 1),
    # largest duration that can be represented by int64 in nanoseconds
    ("9223372036854775807ns", (1 << 63) - 1), ("9223372036854775.807us", (1 << 63) - 1),
    ("9223372036s854ms775us807ns", (1 << 63) - 1), ("-9223372036854775808ns", -(1 << 63)),
    ("-9223372036854775.808us", -(1 << 63)),
    # largest negative value, spelled out
    ("-2562047h47m16.854775808s", -(1 << 63)),
    # huge string; issue 15011
    ("0.100000000000000000000h", 6 * MIN),
    # https://golang.org/issue/19245
    ("0.830103483285477580700h", 49 * MIN + 48 * S + 372539827),
    # the case: the micro sign is a unit
    ("1µs", US),
]


@pytest.mark.parametrize("text,ns", GO_OK)
def test_go_parse_duration_table(text: str, ns: int) -> None:
    assert go_parse(text) == ns


GO_BAD = [
    ("", 'time: invalid duration ""'),
    ("3", 'time: missing unit in duration "3"'),
    ("-", 'time: invalid duration "-"'),
    ("s", 'time: invalid duration "s"'),
    (".", 'time: invalid duration "."'),
    ("-.", 'time: invalid duration "-."'),
    (".s", 'time: invalid duration ".s"'),
    ("+.s", 'time: invalid duration "+.s"'),
    ("1d", 'time: unknown unit "d" in duration "1d"'),
    # Go's raw invalid-UTF-8 bytes, here as surrogate escapes
    ("\udc85\udc85", 'time: invalid duration "\\x85\\x85"'),
    ("\udcffff", 'time: invalid duration "\\xffff"'),
    ("hello \udcffff world", 'time: invalid duration "hello \\xffff world"'),
    ("\xff", 'time: invalid duration "\\xc3\\xbf"'),
    ("\uFFFD", 'time: invalid duration "\\xef\\xbf\\xbd"'),
    ("\uFFFD hello \uFFFD world", 'time: invalid duration "\\xef\\xbf\\xbd hello \\xef\\xbf\\xbd world"'),
    ("9223372036854775808ns", 'time: invalid duration "9223372036854775808ns"'),
    ("9223372036854775.808us", 'time: invalid duration "9223372036854775.808us"'),
    ("9223372036854ms775us808ns", 'time: invalid duration "9223372036854ms775us808ns"'),
    ("-9223372036854775809ns", 'time: invalid duration "-9223372036854775809ns"'),
    ("99999999999999999999999h", 'time: invalid duration "99999999999999999999999h"'),
    ("2562048h", 'time: invalid duration "2562048h"'),
    # issue 25: what the old copies accepted
    ("1 s", 'time: unknown unit " s" in duration "1 s"'),
    (" 1s", 'time: invalid duration " 1s"'),
    ("1s\n", 'time: unknown unit "s\\x0a" in duration "1s\\x0a"'),
    ("\u0661s", 'time: invalid duration "\\xd9\\xa1s"'),
    ("--5s", 'time: invalid duration "--5s"'),
    ("+-5s", 'time: invalid duration "+-5s"'),
    ("1S", 'time: unknown unit "S" in duration "1S"'),
    ("1m-5s", 'time: unknown unit "m-" in duration "1m-5s"'),
    ('1"s', 'time: unknown unit "\\"s" in duration "1\\"s"'),
]


@pytest.mark.parametrize("text,message", GO_BAD)
def test_go_parse_duration_errors_are_gos(text: str, message: str) -> None:
    with pytest.raises(GoError) as exc:
        go_parse(text)
    assert str(exc.value) == message


GO_STRING = [
    ("0s", 0), ("1ns", 1), ("1.1µs", 1100), ("2.2ms", 2200 * US), ("3.3s", 3300 * MS),
    ("4m5s", 4 * MIN + 5 * S), ("4m5.001s", 4 * MIN + 5001 * MS), ("5h6m7.001s", 5 * H + 6 * MIN + 7001 * MS),
    ("8m0.000000001s", 8 * MIN + 1), ("2562047h47m16.854775807s", (1 << 63) - 1),
    ("-2562047h47m16.854775808s", -(1 << 63)), ("1h0m0s", H), ("1.5s", 1500 * MS), ("1µs", US),
    ("-1ns", -1), ("999.999999ms", S - 1), ("1s", S), ("5m0s", 5 * MIN), ("10ms", 10 * MS),
]


@pytest.mark.parametrize("text,ns", GO_STRING)
def test_go_duration_string_table(text: str, ns: int) -> None:
    assert go_format(ns) == text


@pytest.mark.parametrize("ns", [0, 1, -1, 1500, 10**9 + 1, 3 * H + 7, -(1 << 63), (1 << 63) - 1, 123456789012345])
def test_go_string_parses_back(ns: int) -> None:
    assert go_parse(go_format(ns)) == ns


def test_go_format_refuses_beyond_int64() -> None:
    with pytest.raises(OverflowError):
        go_format(1 << 63)


PROM_OK = [
    ("0", 0, "0s"), ("0s", 0, "0s"), ("0w", 0, "0s"), ("324ms", 324, "324ms"), ("3s", 3000, "3s"),
    ("5m", 300_000, "5m"), ("1h", 3_600_000, "1h"), ("4d", 4 * 86_400_000, "4d"),
    ("4d1h", 4 * 86_400_000 + 3_600_000, "4d1h"), ("14d", 14 * 86_400_000, "2w"),
    ("3w", 21 * 86_400_000, "3w"), ("3w2d1h", 23 * 86_400_000 + 3_600_000, "23d1h"),
    ("10y", 3650 * 86_400_000, "10y"), ("1y1d", 366 * 86_400_000, "366d"),
    ("90d", 90 * 86_400_000, "90d"), ("1h30m", 5_400_000, "1h30m"), ("1m30s", 90_000, "1m30s"),
    ("1s500ms", 1500, "1s500ms"), ("60s", 60_000, "1m"), ("0y0w0d0h0m0s0ms", 0, "0s"),
    ("106751d23h47m16s854ms", 9_223_372_036_854, "106751d23h47m16s854ms"),
]


@pytest.mark.parametrize("text,ms,printed", PROM_OK)
def test_prometheus_parse_and_string(text: str, ms: int, printed: str) -> None:
    assert parse_duration(text) == ms
    assert format_duration(ms) == printed


PROM_BAD = [
    "", "1", "-1s", "+1s", "1.5s", "1 s", " 1s", "1s ", "1s\n", "1h1d", "1s1s", "1m1h", "1ms1s", "1us",
    "1ns", "1S", "1D", "d", "\u0661s", "1\u0661s", "s1", "1h30", "293y", "106751d23h47m16s855ms",
    "99999999999999999999999999s",
]


@pytest.mark.parametrize("text", PROM_BAD)
def test_prometheus_refuses(text: str) -> None:
    with pytest.raises(DurationError):
        parse_duration(text)


def test_prometheus_error_messages_name_the_problem() -> None:
    with pytest.raises(DurationError, match="^empty duration string"):
        parse_duration("")
    with pytest.raises(DurationError, match="^not a valid duration string: '1h1d'"):
        parse_duration("1h1d")
    with pytest.raises(DurationError, match="^duration out of range"):
        parse_duration("300y")
    with pytest.raises(DurationError, match="not a duration string"):
        parse_duration(30)


def test_prometheus_largest_duration_is_int64_nanoseconds() -> None:
    assert parse_duration("292y") == 292 * 365 * 86_400_000
    assert parse_duration("9223372036854ms") == 9_223_372_036_854
    with pytest.raises(DurationError):
        parse_duration("9223372036855ms")


@pytest.mark.parametrize("text,size", [("0", 0), ("1B", 1), ("10MB", 10**7), ("1GiB", 1 << 30), ("1.5KiB", 1536)])
def test_sizes(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "10", "10M", "10MB\n", "1 GB", "10mb"])
def test_bad_sizes(text: str) -> None:
    with pytest.raises(DurationError):
        parse_size(text)


def test_go_parse_refuses_non_strings() -> None:
    with pytest.raises(GoError, match="not a string"):
        go_parse(5)  # type: ignore[arg-type]


def test_callers_use_the_exact_grammars() -> None:
    """Each former copy now answers as Go or Prometheus does (the issue's cases)."""
    from promop.autoscale.scenario import parse_duration as scenario_duration
    from promop.autoscale.spec import SpecError
    from promop.vpa.timeutil import parse_duration as vpa_go, parse_prom_duration as vpa_prom
    from reloader.flags import _duration as reloader_flag

    assert scenario_duration("1m30s", "p") == 90.0 and scenario_duration(30, "p") == 30.0
    for bad in (" 5m", "5m\n", "--5s", "\u0665s"):
        with pytest.raises(SpecError):
            scenario_duration(bad, "p")
    assert vpa_go("24h") == 86400.0 and vpa_prom("8d") == 8 * 86400.0
    with pytest.raises(ValueError, match='unknown unit "d"'):
        vpa_go("8d")
    with pytest.raises(ValueError):
        vpa_prom("1.5h")
    assert reloader_flag("1µs") == pytest.approx(1e-6) and reloader_flag("3m") == 180.0
