"""Go's `time.ParseDuration` and `time.Duration.String`, exact on Go's grammar.

Durations are int nanoseconds, as Go's `time.Duration` (an int64) is; the
parser refuses what Go refuses (spaces, non-ASCII digits, `--5s`, int64
overflow) with Go's own message, so a flag that promop accepts is one the Go
binary it stands in for would accept too.
"""

from __future__ import annotations

NANOSECOND = 1
MICROSECOND = 1000 * NANOSECOND
MILLISECOND = 1000 * MICROSECOND
SECOND = 1000 * MILLISECOND
MINUTE = 60 * SECOND
HOUR = 60 * MINUTE

_UNITS = {
    b"ns": NANOSECOND,
    b"us": MICROSECOND,
    "µ".encode() + b"s": MICROSECOND,  # U+00B5 micro sign
    "μ".encode() + b"s": MICROSECOND,  # U+03BC Greek small letter mu
    b"ms": MILLISECOND,
    b"s": SECOND,
    b"m": MINUTE,
    b"h": HOUR,
}
_U63 = 1 << 63
_MAX_INT64 = _U63 - 1
_DIGITS = b"0123456789"


class DurationError(ValueError):
    """Text Go's time.ParseDuration refuses; the message is Go's."""


def go_quote(text: str | bytes) -> str:
    """Go's time-package `quote`: ASCII printable as is, every other byte of a rune as `\\xNN`."""
    data = text.encode("utf-8", "surrogateescape") if isinstance(text, str) else text
    out = ['"']
    for ch in data.decode("utf-8", "surrogateescape"):
        raw = ch.encode("utf-8", "surrogateescape")
        if len(raw) > 1 or raw[0] < 0x20 or raw[0] >= 0x80:
            out.extend(f"\\x{b:02x}" for b in raw)
        else:
            out.append("\\" + ch if ch in '"\\' else ch)
    out.append('"')
    return "".join(out)


def _invalid(orig: bytes) -> DurationError:
    return DurationError("time: invalid duration " + go_quote(orig))


def _leading_int(s: bytes) -> tuple[int | None, bytes]:
    """Consume [0-9]*; None on uint64 overflow past 1<<63 (Go's errLeadingInt)."""
    x, i = 0, 0
    while i < len(s) and s[i] in _DIGITS:
        if x > _U63 // 10:
            return None, s
        x = x * 10 + s[i] - 48
        if x > _U63:
            return None, s
        i += 1
    return x, s[i:]


def _leading_fraction(s: bytes) -> tuple[int, float, bytes]:
    """Consume [0-9]* after the point; past uint64 precision digits are skipped, as Go does."""
    x, scale, i, overflow = 0, 1.0, 0, False
    while i < len(s) and s[i] in _DIGITS:
        c = s[i]
        i += 1
        if overflow:
            continue
        if x > _MAX_INT64 // 10:
            overflow = True
            continue
        y = x * 10 + c - 48
        if y > _U63:
            overflow = True
            continue
        x = y
        scale *= 10
    return x, scale, s[i:]


def _unit_end(s: bytes) -> int:
    i = 0
    while i < len(s) and s[i] != 0x2E and s[i] not in _DIGITS:
        i += 1
    return i


def _component(s: bytes, orig: bytes) -> tuple[int, bytes]:
    """One `[0-9]*(\\.[0-9]*)?unit` term: its unsigned nanoseconds and the rest of the text."""
    if s[0] != 0x2E and s[0] not in _DIGITS:
        raise _invalid(orig)
    before = len(s)
    v, s = _leading_int(s)
    if v is None:
        raise _invalid(orig)
    pre = before != len(s)
    f, scale, post = 0, 1.0, False
    if s[:1] == b".":
        s = s[1:]
        before = len(s)
        f, scale, s = _leading_fraction(s)
        post = before != len(s)
    if not pre and not post:
        raise _invalid(orig)
    i = _unit_end(s)
    if i == 0:
        raise DurationError("time: missing unit in duration " + go_quote(orig))
    name, s = s[:i], s[i:]
    unit = _UNITS.get(name)
    if unit is None:
        raise DurationError(f"time: unknown unit {go_quote(name)} in duration {go_quote(orig)}")
    if v > _U63 // unit:
        raise _invalid(orig)
    v *= unit
    if f > 0:
        # Go computes the fraction in float64 and truncates, so its precision is ours.
        v += int(float(f) * (float(unit) / scale))
        if v > _U63:
            raise _invalid(orig)
    return v, s


def parse_duration(text: str) -> int:
    """Nanoseconds in `text` (`1h30m`, `1.5s`, `-300ms`, `0`); raises DurationError with Go's message."""
    if not isinstance(text, str):
        raise DurationError(f"time: invalid duration {text!r}: not a string")
    orig = text.encode("utf-8", "surrogateescape")
    s = orig
    neg = False
    if s[:1] in (b"-", b"+"):
        neg = s[:1] == b"-"
        s = s[1:]
    if s == b"0":
        return 0
    if not s:
        raise _invalid(orig)
    d = 0
    while s:
        v, s = _component(s, orig)
        d += v
        if d > _U63:
            raise _invalid(orig)
    if neg:
        return -d
    if d > _MAX_INT64:
        raise _invalid(orig)
    return d


def parse_seconds(text: str) -> float:
    """parse_duration in float seconds, for callers that count time in seconds."""
    return parse_duration(text) / SECOND


def _frac(v: int, prec: int) -> tuple[str, int]:
    """Go's fmtFrac: `.123` for v's last prec digits (trailing zeros dropped), and v without them."""
    digits = []
    printed = False
    for _ in range(prec):
        digit = v % 10
        printed = printed or digit != 0
        if printed:
            digits.append(str(digit))
        v //= 10
    text = "." + "".join(reversed(digits)) if printed else ""
    return text, v


def format_duration(ns: int) -> str:
    """Go's time.Duration.String: `1h0m0s`, `1.5s`, `1µs`, `-2m3.5s`, `0s` (ns is an int64)."""
    ns = int(ns)
    if not -_U63 <= ns <= _MAX_INT64:
        raise OverflowError(f"{ns} nanoseconds does not fit a Go time.Duration (int64)")
    u = abs(ns)
    sign = "-" if ns < 0 else ""
    if u < SECOND:
        if u == 0:
            return "0s"
        if u < MICROSECOND:
            return f"{sign}{u}ns"
        prec, unit = (3, "µs") if u < MILLISECOND else (6, "ms")
        frac, whole = _frac(u, prec)
        return f"{sign}{whole}{frac}{unit}"
    frac, u = _frac(u, 9)
    text = f"{u % 60}{frac}s"
    u //= 60
    if u > 0:
        text = f"{u % 60}m{text}"
        u //= 60
        if u > 0:
            text = f"{u}h{text}"
    return sign + text


def format_seconds(seconds: float) -> str:
    """format_duration for a time counted in float seconds (rounded to the nanosecond)."""
    return format_duration(round(seconds * SECOND))
