"""Go's `regexp`, through RE2: every Go regex promop checks or runs goes through here.

Prometheus (relabel and metric-relabel `regex`), Alertmanager (matchers), the
apiserver (CRD `pattern`) and prometheus-adapter (`seriesFilters`, `name.matches`)
all use Go's `regexp`, which implements RE2's syntax and semantics. We use RE2
itself (the `google-re2` bindings) instead of imitating it with Python's `re`,
whose `$`, `\\d`, `\\w`, `\\s`, `\\b`, flag groups and backtracking all differ.

RE2 is run with its default options, which are what Go's `syntax.Perl` flags
mean: UTF-8, Perl classes (`\\d \\s \\w`, ASCII only), `\\b`, non-greedy
operators, `(?flags)`, `^`/`$` at text edges unless `(?m)` (one_line is
implied when posix_syntax is off), `.` not matching `\\n` unless `(?s)`,
leftmost-first (not longest) matching, case-sensitive. Only `log_errors`
(RE2 would print every refused pattern to stderr) and `max_mem` differ.

Where RE2 and Go differ, a short pre-scan decides as Go does:
- `\\C` (any byte): RE2 accepts it, Go refuses it.
- `(?<name>...)`: Go accepts it since 1.22 (Prometheus 3); older Go refuses it.
- nesting deeper than 1000 (Go: "expression nests too deeply"); RE2 has no such limit.
Errors are worded as Go words them (`error parsing regexp: missing closing ): ...`).

Known gaps: Go >= 1.25 also accepts loose Unicode class names (`\\p{Letter}`,
`\\p{ascii}`, `\\p{Cn}`, `\\p{LC}`); RE2 refuses them, and so do we. Go's size
limits ("expression too large") are approximated by RE2's `max_mem`. The nesting
height ignores the extra depth Go's alternation factoring can add.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import re2

MAX_HEIGHT = 1000  # Go's regexp/syntax maxHeight
_MAX_MEM = 64 << 20  # RE2's default 8 MiB refuses `\pL{1000}`, which Go accepts

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False
_OPTIONS.max_mem = _MAX_MEM

# RE2's error texts -> Go's (regexp/syntax ErrorCode strings)
_GO_CODES = {
    "missing )": "missing closing )",
    "missing ]": "missing closing ]",
    "unexpected )": "unexpected )",
    "trailing \\": "trailing backslash at end of expression",
    "no argument for repetition operator": "missing argument to repetition operator",
    "invalid repetition size": "invalid repeat count",
    "bad repetition operator": "invalid nested repetition operator",
    "invalid perl operator": "invalid or unsupported Perl syntax",
    "invalid named capture group": "invalid named capture",
    "invalid escape sequence": "invalid escape sequence",
    "invalid character class": "invalid character class",
    "invalid character class range": "invalid character class range",
    "invalid UTF-8": "invalid UTF-8",
    "pattern too large - compile failed": "expression too large",
}


class GoRegexError(ValueError):
    """A pattern Go's regexp.Compile refuses; str() is Go's own error text."""


def _go_message(code: str, expr: str) -> str:
    return f"error parsing regexp: {code}: `{expr}`"


def _from_re2(text: str, pattern: str) -> str:
    """Go's wording for RE2's error `text` ("<code>: <arg>" or just "<code>")."""
    for re2_code in sorted(_GO_CODES, key=len, reverse=True):
        if text == re2_code:
            return _go_message(_GO_CODES[re2_code], pattern if re2_code.startswith("pattern") else "")
        if text.startswith(re2_code + ": "):
            return _go_message(_GO_CODES[re2_code], text[len(re2_code) + 2:])
    return f"error parsing regexp: {text}: `{pattern}`"


@dataclass(frozen=True)
class _Scan:
    """What the Go-only checks need from one pass over a pattern RE2 accepted."""

    problem: str | None
    names: tuple[str, ...]  # capture group names in order, "" for unnamed (Go's SubexpNames()[1:])


class GoRegexp:
    """A compiled Go regexp: search/match/fullmatch as Python's `re`, plus Go's group names."""

    __slots__ = ("pattern", "_rx", "subexp_names")

    def __init__(self, pattern: str, rx: Any, names: tuple[str, ...]):
        self.pattern = pattern
        self._rx = rx
        self.subexp_names = ("",) + names  # index 0 is the whole match, as in Go

    @property
    def groups(self) -> int:
        return self._rx.groups

    @property
    def groupindex(self) -> dict[str, int]:
        return dict(self._rx.groupindex)

    def search(self, text: str) -> Any:
        """Go's FindStringSubmatch / MatchString: the leftmost match anywhere in `text`."""
        return self._rx.search(text)

    def match(self, text: str) -> Any:
        return self._rx.match(text)

    def fullmatch(self, text: str) -> Any:
        return self._rx.fullmatch(text)

    def __repr__(self) -> str:
        return f"GoRegexp({self.pattern!r})"


@lru_cache(maxsize=4096)
def _compile(pattern: str, angle_named_groups: bool) -> GoRegexp | str:
    try:
        rx = re2.compile(pattern, _OPTIONS)
    except re2.error as exc:
        text = exc.args[0] if exc.args else ""
        if isinstance(text, bytes):
            text = text.decode("utf-8", "replace")
        return _from_re2(str(text), pattern)
    except UnicodeEncodeError:
        return _go_message("invalid UTF-8", pattern)
    scan = _scan(pattern, angle_named_groups)
    if scan.problem:
        return scan.problem
    return GoRegexp(pattern, rx, scan.names)


def compile_go(pattern: str, *, angle_named_groups: bool = True) -> GoRegexp:
    """regexp.Compile(pattern) as Go does it; GoRegexError carries Go's message.

    `angle_named_groups`: does the target's Go accept `(?<name>...)` (Go >= 1.22)?
    """
    out = _compile(pattern, angle_named_groups)
    if isinstance(out, str):
        raise GoRegexError(out)
    return out


def go_error(pattern: str, *, angle_named_groups: bool = True) -> str | None:
    """None if Go's regexp.Compile accepts `pattern`, else Go's error text."""
    out = _compile(pattern, angle_named_groups)
    return out if isinstance(out, str) else None


def prometheus_anchored(regex: str) -> str:
    """What Prometheus compiles for a relabel regex (relabel.NewRegexp)."""
    return "^(?s:" + regex + ")$"


def prometheus_regex_error(regex: str, *, angle_named_groups: bool = True) -> str | None:
    """None if Prometheus accepts `regex` as a relabel/metric-relabel regex, else Go's error.

    Prometheus compiles the anchored form, so `a)|(b` is valid there.
    """
    return go_error(prometheus_anchored(regex), angle_named_groups=angle_named_groups)


def alertmanager_regex_error(value: str, *, angle_named_groups: bool = True) -> str | None:
    """None if Alertmanager accepts `value` as a `=~`/`!~` matcher value (it anchors `^(?:...)$`)."""
    return go_error("^(?:" + value + ")$", angle_named_groups=angle_named_groups)


# --- the pre-scan: \C, (?<name>, nesting height ------------------------------------------


class _Frame:
    """One open group while scanning: its finished alternatives and the current concatenation."""

    __slots__ = ("capture", "alts", "items", "last_literal")

    def __init__(self, capture: bool):
        self.capture = capture
        self.alts: list[int] = []
        self.items: list[int] = []
        self.last_literal = False  # Go merges a run of literal runes into one node

    def add(self, height: int, literal: bool = False) -> None:
        if literal and self.last_literal:
            return
        self.items.append(height)
        self.last_literal = literal

    def repeat(self) -> None:
        if self.items:
            self.items[-1] += 1
        self.last_literal = False

    def end_concat(self) -> None:
        items = self.items
        self.alts.append(1 if not items else max(items) + (1 if len(items) > 1 else 0))
        self.items, self.last_literal = [], False

    def height(self) -> int:
        self.end_concat()
        alts = self.alts
        h = max(alts) + (1 if len(alts) > 1 else 0)
        return h + 1 if self.capture else h


def _repeat_end(s: str, i: int) -> int:
    """End of a `{n}`, `{n,}` or `{n,m}` starting at s[i], or -1 (then `{` is a literal)."""
    j = i + 1
    start = j
    while j < len(s) and s[j].isdigit() and s[j].isascii():
        j += 1
    if j == start or j >= len(s):
        return -1
    if s[j] == ",":
        j += 1
        while j < len(s) and s[j].isdigit() and s[j].isascii():
            j += 1
    return j + 1 if j < len(s) and s[j] == "}" else -1


def _escape_end(s: str, i: int) -> int:
    """End of the escape starting with the backslash at s[i] (`\\x{..}`, `\\p{..}`, `\\Q..\\E`)."""
    c = s[i + 1] if i + 1 < len(s) else ""
    if c in ("x", "p", "P") and s[i + 2:i + 3] == "{":
        end = s.find("}", i + 3)
        return len(s) if end < 0 else end + 1
    if c == "x":
        return i + 4
    if c in ("p", "P"):
        return i + 3
    return i + 2


def _class_end(s: str, i: int) -> int:
    """End of the character class starting at s[i] (`[`)."""
    j = i + 1
    if s[j:j + 1] == "^":
        j += 1
    first = True
    while j < len(s) and (s[j] != "]" or first):
        first = False
        if s.startswith("[:", j) and s.find(":]", j + 2) >= 0:
            j = s.find(":]", j + 2) + 2
        elif s[j] == "\\":
            j = _escape_end(s, j)
        else:
            j += 1
    return j + 1


def _scan(s: str, angle_named_groups: bool) -> _Scan:
    """Go-only checks on a pattern RE2 accepted, with the capture names in order."""
    names: list[str] = []
    stack = [_Frame(capture=False)]
    i, n = 0, len(s)
    while i < n:
        c = s[i]
        top = stack[-1]
        if c == "\\":
            if s[i + 1:i + 2] == "C":
                return _Scan(_go_message("invalid escape sequence", "\\C"), ())
            if s[i + 1:i + 2] == "Q":
                end = s.find("\\E", i + 2)
                end = n if end < 0 else end
                if end > i + 2:
                    top.add(1, literal=True)
                i = end + 2
                continue
            j = _escape_end(s, i)
            top.add(1, literal=s[i + 1:i + 2] not in ("d", "D", "s", "S", "w", "W", "p", "P", "b", "B", "A", "z"))
            i = j
        elif c == "[":
            class_end = _class_end(s, i)
            if "\\C" in s[i:class_end]:
                return _Scan(_go_message("invalid escape sequence", "\\C"), ())
            top.add(1)
            i = class_end
        elif c == "(":
            i, problem = _open_group(s, i, stack, names, angle_named_groups)
            if problem:
                return _Scan(problem, ())
        elif c == ")":
            frame = stack.pop()
            h = frame.height()
            if h > MAX_HEIGHT:
                return _Scan(_go_message("expression nests too deeply", s), ())
            stack[-1].add(h)
            i += 1
        elif c == "|":
            top.end_concat()
            i += 1
        elif c in "*+?":
            top.repeat()
            i += 2 if s[i + 1:i + 2] == "?" else 1
        elif c == "{" and _repeat_end(s, i) > 0:
            top.repeat()
            i = _repeat_end(s, i)
            i += 1 if s[i:i + 1] == "?" else 0
        else:
            top.add(1, literal=c not in ".^$")
            i += 1
    if stack[0].height() > MAX_HEIGHT:
        return _Scan(_go_message("expression nests too deeply", s), ())
    return _Scan(None, tuple(names))


def _open_group(s: str, i: int, stack: list[_Frame], names: list[str], angle: bool) -> tuple[int, str | None]:
    """Handle the `(` at s[i]: push a frame (or apply a flag group); return the next index."""
    if s[i + 1:i + 2] != "?":
        names.append("")
        stack.append(_Frame(capture=True))
        return i + 1, None
    if s.startswith("(?P<", i) or s.startswith("(?<", i):
        if s[i + 2] == "<" and not angle:
            return i, _go_message("invalid or unsupported Perl syntax", "(?<")
        end = s.index(">", i)
        names.append(s[s.index("<", i) + 1:end])
        stack.append(_Frame(capture=True))
        return end + 1, None
    j = i + 2
    while j < len(s) and s[j] not in ":)":
        j += 1
    if s[j] == ":":
        stack.append(_Frame(capture=False))
    return j + 1, None


# --- Go's Regexp.Expand ------------------------------------------------------------------


def _is_name_char(ch: str) -> bool:
    """Go's extract(): unicode.IsLetter, unicode.IsDigit (Nd) or `_`."""
    return ch == "_" or ch.isalpha() or ch.isdecimal()


def _extract(t: str) -> tuple[str, int, str] | None:
    """Go's regexp extract(): (name, number or -1, rest) of a `$` reference, None if malformed."""
    brace = t.startswith("{")
    body = t[1:] if brace else t
    i = 0
    while i < len(body) and _is_name_char(body[i]):
        i += 1
    if i == 0:
        return None
    name = body[:i]
    if brace:
        if i >= len(body) or body[i] != "}":
            return None
        i += 1
    num = -1
    if name.isascii() and name.isdigit() and len(name) <= 8 and not (name[0] == "0" and len(name) > 1):
        num = int(name)
    return name, num, body[i:]


def expand(template: str, regex: GoRegexp, m: Any) -> str:
    """Go's Regexp.ExpandString(nil, template, src, match): `$1`, `${1}`, `$name`, `${name}`, `$$`.

    As in Go: the longest name wins (`$1x` is `${1x}`), an unknown or unmatched
    group expands to "", a malformed reference leaves the `$` as text, and a name
    shared by several groups takes the first of them that matched.
    """
    out: list[str] = []
    rest = template
    while True:
        before, sep, after = rest.partition("$")
        if not sep:
            break
        out.append(before)
        rest = after
        if rest.startswith("$"):
            out.append("$")
            rest = rest[1:]
            continue
        ref = _extract(rest)
        if ref is None:
            out.append("$")
            continue
        name, num, rest = ref
        out.append(_group_text(regex, m, name, num))
    out.append(rest)
    return "".join(out)


def _group_text(regex: GoRegexp, m: Any, name: str, num: int) -> str:
    if num >= 0:
        return (m.group(num) or "") if num <= regex.groups else ""
    for idx, sub in enumerate(regex.subexp_names):
        if idx and sub == name and m.group(idx) is not None:
            return m.group(idx)
    return ""


def go_pattern(pattern: str) -> GoRegexp | None:
    """A CRD `pattern` as the apiserver runs it (unanchored MatchString); None if Go refuses it.

    The apiserver refuses such a CRD outright, so there is nothing to check values against.
    """
    try:
        return compile_go(pattern)
    except GoRegexError:
        return None
