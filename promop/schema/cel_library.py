"""Kubernetes' CEL libraries, as Python functions for the `cel` package (common-expression-language).

CEL itself (macros, operators, `size`, `matches`, `startsWith`, conversions) is the library's; what
the apiserver adds on top for `x-kubernetes-validations` is here, named as Kubernetes names it:

- strings (k8s.io/apiserver/pkg/cel/library, ext.Strings v2): charAt, indexOf, lastIndexOf,
  lowerAscii, upperAscii, replace, split, substring, trim, join;
- lists: isSorted, sum, min, max, indexOf, lastIndexOf;
- regex: find, findAll, and `matches` itself (RE2, as Go's regexp; see promop.schema.cel);
- quantity(s), isQuantity(s) and the quantity methods;
- url(s), isURL(s) and the URL getters.

The `cel` package passes plain Python values to these functions, so a quantity and a URL travel
through CEL as one-key maps (`{"@quantity": "num/den"}`, `{"@url": text}`). The quantity's key is
its exact value, so `==` between quantities compares values as Kubernetes does. A function that
raises makes the rule fail to evaluate, as a CEL error does in the apiserver.
"""

from __future__ import annotations

import re
import urllib.parse
from fractions import Fraction
from typing import Any, Callable

from promop.goregex import GoRegexError, compile_go
from promop.quantity import QuantityError, approximate_float, parse_quantity

QUANTITY_KEY = "@quantity"
URL_KEY = "@url"
_INT64 = (-(2**63), 2**63 - 1)


class LibraryError(ValueError):
    """A library function refused its arguments (the rule fails to evaluate)."""


# -- strings ------------------------------------------------------------------------------------

def _need_str(value: Any, fn: str) -> str:
    if not isinstance(value, str):
        raise LibraryError(f"no such overload: {fn} on {type(value).__name__}")
    return value


def char_at(s: str, i: int) -> str:
    _need_str(s, "charAt")
    if i < 0 or i > len(s):
        raise LibraryError(f"index out of range: {i}")
    return s[i] if i < len(s) else ""


def index_of(target: Any, item: Any, offset: int = 0) -> int:
    if isinstance(target, list):
        return next((n for n, x in enumerate(target) if _same(x, item)), -1)
    s = _need_str(target, "indexOf")
    if offset < 0 or offset > len(s):
        raise LibraryError(f"index out of range: {offset}")
    return s.find(_need_str(item, "indexOf"), offset)


def last_index_of(target: Any, item: Any, offset: int | None = None) -> int:
    if isinstance(target, list):
        return next((n for n in range(len(target) - 1, -1, -1) if _same(target[n], item)), -1)
    s = _need_str(target, "lastIndexOf")
    sub = _need_str(item, "lastIndexOf")
    if offset is None:
        return s.rfind(sub)
    if offset < 0 or offset >= max(len(s), 1):
        raise LibraryError(f"index out of range: {offset}")
    return s.rfind(sub, 0, offset + len(sub))


def lower_ascii(s: str) -> str:
    return "".join(c.lower() if "A" <= c <= "Z" else c for c in _need_str(s, "lowerAscii"))


def upper_ascii(s: str) -> str:
    return "".join(c.upper() if "a" <= c <= "z" else c for c in _need_str(s, "upperAscii"))


def replace(s: str, old: str, new: str, n: int = -1) -> str:
    return _need_str(s, "replace").replace(old, new, n if n >= 0 else -1)


def split(s: str, sep: str, n: int = -1) -> list[str]:
    _need_str(s, "split")
    if n == 0:
        return []
    if sep == "":
        chars = list(s)
        return chars if n < 0 or n >= len(chars) else chars[:n - 1] + ["".join(chars[n - 1:])]
    return s.split(sep, n - 1 if n > 0 else -1)


def substring(s: str, start: int, end: int | None = None) -> str:
    _need_str(s, "substring")
    end = len(s) if end is None else end
    if start < 0 or start > len(s) or end < 0 or end > len(s):
        raise LibraryError(f"index out of range: {start if not 0 <= start <= len(s) else end}")
    if start > end:
        raise LibraryError(f"invalid substring range. start: {start}, end: {end}")
    return s[start:end]


def trim(s: str) -> str:
    return _need_str(s, "trim").strip()


def join(items: list, sep: str = "") -> str:
    if not isinstance(items, list) or not all(isinstance(x, str) for x in items):
        raise LibraryError("join needs a list of strings")
    return sep.join(items)


# -- lists --------------------------------------------------------------------------------------

def _same(a: Any, b: Any) -> bool:
    return a == b and isinstance(a, bool) == isinstance(b, bool)


def _comparable(items: Any, fn: str) -> list:
    if not isinstance(items, list):
        raise LibraryError(f"no such overload: {fn} on {type(items).__name__}")
    kinds = {"num" if isinstance(x, (int, float)) and not isinstance(x, bool) else type(x).__name__
             for x in items}
    if len(kinds) > 1 or kinds & {"dict", "list", "NoneType"}:
        raise LibraryError(f"no such overload: {fn} on a list of mixed or uncomparable items")
    return items


def is_sorted(items: list) -> bool:
    items = _comparable(items, "isSorted")
    return all(items[n] <= items[n + 1] for n in range(len(items) - 1))


def sum_(items: list) -> Any:
    items = _comparable(items, "sum")
    return sum(items) if items else 0


def min_(items: list) -> Any:
    items = _comparable(items, "min")
    if not items:
        raise LibraryError("min called on empty list")
    return min(items)


def max_(items: list) -> Any:
    items = _comparable(items, "max")
    if not items:
        raise LibraryError("max called on empty list")
    return max(items)


# -- regex --------------------------------------------------------------------------------------

_regexes: dict[str, Any] = {}


def _regex(pattern: str) -> Any:
    rx = _regexes.get(pattern)
    if rx is None:
        try:
            rx = compile_go(pattern)
        except GoRegexError as e:
            raise LibraryError(f"invalid regex {pattern!r}: {e}") from None
        if len(_regexes) > 256:
            _regexes.clear()
        _regexes[pattern] = rx
    return rx


def re2_matches(s: str, pattern: str) -> bool:
    """CEL's `matches` as cel-go does it (RE2, unanchored). The `cel` package's own `matches` is
    Rust's regex, whose \\d, \\w, \\s and \\b are Unicode where Go's are ASCII."""
    return _regex(pattern).search(_need_str(s, "matches")) is not None


def find(s: str, pattern: str) -> str:
    m = _regex(pattern).search(_need_str(s, "find"))
    return m.group(0) if m else ""


def find_all(s: str, pattern: str, n: int = -1) -> list[str]:
    found = [m.group(0) for m in _regex(pattern).finditer(_need_str(s, "findAll"))]
    return found if n < 0 else found[:n]


# -- quantity -----------------------------------------------------------------------------------

def _parse_quantity_text(s: Any) -> Fraction:
    if not isinstance(s, str) or s != s.strip():
        raise LibraryError(f"invalid quantity: {s!r}")
    try:
        return parse_quantity(s)
    except QuantityError as e:
        raise LibraryError(str(e)) from None


def _as_quantity(value: Fraction) -> dict:
    return {QUANTITY_KEY: f"{value.numerator}/{value.denominator}"}


def _value(q: Any) -> Fraction:
    if isinstance(q, dict) and set(q) == {QUANTITY_KEY}:
        return Fraction(q[QUANTITY_KEY])
    if isinstance(q, int) and not isinstance(q, bool):
        return Fraction(q)
    raise LibraryError(f"not a quantity: {q!r}")


def quantity(s: str) -> dict:
    return _as_quantity(_parse_quantity_text(s))


def is_quantity(s: str) -> bool:
    try:
        _parse_quantity_text(s)
    except LibraryError:
        return False
    return True


def _fits(v: Fraction) -> bool:
    return v.denominator == 1 and _INT64[0] <= v <= _INT64[1]


def q_is_integer(q: dict) -> bool:
    return _fits(_value(q))


def q_as_integer(q: dict) -> int:
    v = _value(q)
    if not _fits(v):
        raise LibraryError("cannot convert value to integer")
    return int(v)


def q_as_approximate_float(q: dict) -> float:
    v = _value(q)
    return approximate_float(str(v) if v.denominator == 1 else float(v))


def q_sign(q: dict) -> int:
    v = _value(q)
    return (v > 0) - (v < 0)


def q_add(q: dict, other: Any) -> dict:
    return _as_quantity(_value(q) + _value(other))


def q_sub(q: dict, other: Any) -> dict:
    return _as_quantity(_value(q) - _value(other))


def q_compare_to(q: dict, other: dict) -> int:
    a, b = _value(q), _value(other)
    return (a > b) - (a < b)


def q_is_greater_than(q: dict, other: dict) -> bool:
    return _value(q) > _value(other)


def q_is_less_than(q: dict, other: dict) -> bool:
    return _value(q) < _value(other)


# -- url ----------------------------------------------------------------------------------------

def _parse_url(s: Any) -> urllib.parse.SplitResult:
    """Go's url.ParseRequestURI: an absolute URL, or an absolute path; no fragment."""
    if not isinstance(s, str) or not s or any(c in s for c in " \t\r\n") or "#" in s:
        raise LibraryError(f"URL parse error during conversion from string: {s!r}")
    parts = urllib.parse.urlsplit(s)
    if not (parts.scheme and re.fullmatch(r"[A-Za-z][A-Za-z0-9+.-]*", parts.scheme)) \
            and not s.startswith("/"):
        raise LibraryError(f"URL parse error during conversion from string: {s!r}")
    return parts


def url(s: str) -> dict:
    _parse_url(s)
    return {URL_KEY: s}


def is_url(s: str) -> bool:
    try:
        _parse_url(s)
    except LibraryError:
        return False
    return True


def _url(u: Any) -> urllib.parse.SplitResult:
    if isinstance(u, dict) and set(u) == {URL_KEY}:
        return _parse_url(u[URL_KEY])
    raise LibraryError(f"not a URL: {u!r}")


def get_scheme(u: dict) -> str:
    return _url(u).scheme


def get_host(u: dict) -> str:
    return _url(u).netloc.rpartition("@")[2]


def get_hostname(u: dict) -> str:
    host = get_host(u)
    if host.startswith("["):
        return host[1:host.find("]")]
    return host.rpartition(":")[0] if ":" in host else host


def get_port(u: dict) -> str:
    host = get_host(u)
    tail = host[host.find("]") + 1:] if host.startswith("[") else host
    return tail.rpartition(":")[2] if ":" in tail else ""


def get_escaped_path(u: dict) -> str:
    return _url(u).path


def get_query(u: dict) -> dict[str, list[str]]:
    return urllib.parse.parse_qs(_url(u).query, keep_blank_values=True)


# -- the table ----------------------------------------------------------------------------------

FUNCTIONS: dict[str, Callable[..., Any]] = {
    "charAt": char_at, "indexOf": index_of, "lastIndexOf": last_index_of,
    "lowerAscii": lower_ascii, "upperAscii": upper_ascii, "replace": replace, "split": split,
    "substring": substring, "trim": trim, "join": join,
    "isSorted": is_sorted, "sum": sum_, "min": min_, "max": max_,
    "re2Matches": re2_matches, "find": find, "findAll": find_all,
    "quantity": quantity, "isQuantity": is_quantity, "isInteger": q_is_integer,
    "asInteger": q_as_integer, "asApproximateFloat": q_as_approximate_float, "sign": q_sign,
    "add": q_add, "sub": q_sub, "compareTo": q_compare_to,
    "isGreaterThan": q_is_greater_than, "isLessThan": q_is_less_than,
    "url": url, "isURL": is_url, "getScheme": get_scheme, "getHost": get_host,
    "getHostname": get_hostname, "getPort": get_port, "getEscapedPath": get_escaped_path,
    "getQuery": get_query,
}
