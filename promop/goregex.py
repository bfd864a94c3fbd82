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
- group names beyond `[A-Za-z0-9_]` (`(?P<é>...)`): RE2 accepts them, Go refuses them.
- nesting deeper than 1000 (Go: "expression nests too deeply"); RE2 has no such limit.
- Go's program-size limit ("expression too large") and repeat counts too big to read
  (`x{9876543210}`, refused by Go, a literal to RE2).
Errors are worded as Go words them (`error parsing regexp: missing closing ): ...`).

Known gaps: Go >= 1.25 also accepts loose Unicode class names (`\\p{Letter}`,
`\\p{ascii}`, `\\p{Cn}`, `\\p{LC}`); RE2 refuses them, and so do we. Go's limit on
the runes in classes (maxRunes) is approximated by RE2's `max_mem`. Height and size
ignore the changes Go's alternation factoring makes to the tree.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import re2
from re2 import _re2

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

_RE2_CODES_LONGEST_FIRST = sorted(_GO_CODES, key=len, reverse=True)  # "invalid character class range" first


class GoRegexError(ValueError):
    """A pattern Go's regexp.Compile refuses; str() is Go's own error text."""


def _go_message(code: str, expr: str) -> str:
    return f"error parsing regexp: {code}: `{expr}`"


def _from_re2(text: str, pattern: str, angle_named_groups: bool) -> str:
    """Go's wording for RE2's error `text` ("<code>: <arg>" or just "<code>")."""
    if text.startswith("invalid perl operator: (?<"):
        # `(?<=`, `(?<!`: Go >= 1.22 reads a group name up to `>`; older Go stops at `(?<`
        if not angle_named_groups:
            return _go_message("invalid or unsupported Perl syntax", "(?<")
        rest = pattern[pattern.find(text[len("invalid perl operator: "):]):]
        end = rest.find(">")
        return _go_message("invalid named capture", rest if end < 0 else rest[:end + 1])
    for re2_code in _RE2_CODES_LONGEST_FIRST:
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


class GoMatch:
    """One match: `group`, `groups`, `groupdict`, `span`, `start`, `end` as Python's `re.Match`."""

    __slots__ = ("string", "_spans", "_regex")

    def __init__(self, string: str, spans: list[tuple[int, int]], regex: GoRegexp):
        self.string = string
        self._spans = spans
        self._regex = regex

    def _index(self, group: int | str) -> int:
        if isinstance(group, str):
            return self._regex.groupindex[group]
        if not 0 <= group < len(self._spans):
            raise IndexError("no such group")
        return group

    def group(self, *groups: int | str) -> Any:
        if len(groups) > 1:
            return tuple(self.group(g) for g in groups)
        a, b = self._spans[self._index(groups[0] if groups else 0)]
        return None if a < 0 else self.string[a:b]

    def __getitem__(self, group: int | str) -> str | None:
        return self.group(group)

    def groups(self, default: Any = None) -> tuple:
        return tuple(default if a < 0 else self.string[a:b] for a, b in self._spans[1:])

    def groupdict(self, default: Any = None) -> dict[str, Any]:
        return {name: (self.group(name) if self.group(name) is not None else default)
                for name in self._regex.groupindex}

    def span(self, group: int | str = 0) -> tuple[int, int]:
        return self._spans[self._index(group)]

    def start(self, group: int | str = 0) -> int:
        return self.span(group)[0]

    def end(self, group: int | str = 0) -> int:
        return self.span(group)[1]

    def __repr__(self) -> str:
        return f"<GoMatch span={self.span()} match={self.group()!r}>"


_UNANCHORED = _re2.RE2.Anchor.UNANCHORED
_ANCHOR_START = _re2.RE2.Anchor.ANCHOR_START
_ANCHOR_BOTH = _re2.RE2.Anchor.ANCHOR_BOTH
_NO_SPAN = (-1, -1)


class GoRegexp:
    """A compiled Go regexp: search/match/fullmatch/finditer as Python's `re`, plus Go's group names.

    Calls RE2's matcher directly on UTF-8 bytes: the `re2` module's `re`-like wrapper costs
    about 15 µs a call, ten times the match itself, and the adapter runs one per series name.
    """

    __slots__ = ("pattern", "_rx", "subexp_names", "groups", "groupindex")

    def __init__(self, pattern: str, rx: Any, names: tuple[str, ...]):
        self.pattern = pattern
        self._rx = rx
        self.subexp_names = ("",) + names  # index 0 is the whole match, as in Go
        self.groups: int = rx.NumberOfCapturingGroups()
        self.groupindex: dict[str, int] = {k.decode("utf-8"): v for k, v in rx.NamedCapturingGroups()}

    def _run(self, anchor: Any, text: str) -> GoMatch | None:
        text = _utf8able(text)
        data = text.encode("utf-8")
        spans = self._rx.Match(anchor, data, 0, len(data))
        if spans[0] == _NO_SPAN:
            return None
        if len(data) != len(text):
            spans = [_char_span(data, sp) for sp in spans]
        return GoMatch(text, spans, self)

    def search(self, text: str) -> GoMatch | None:
        """Go's FindStringSubmatch / MatchString: the leftmost match anywhere in `text`."""
        return self._run(_UNANCHORED, text)

    def match(self, text: str) -> GoMatch | None:
        return self._run(_ANCHOR_START, text)

    def fullmatch(self, text: str) -> GoMatch | None:
        return self._run(_ANCHOR_BOTH, text)

    def finditer(self, text: str) -> Iterator[GoMatch]:
        """Go's FindAllStringSubmatch(text, -1): no empty match right after a previous match."""
        text = _utf8able(text)
        data = text.encode("utf-8")
        pos, prev_end = 0, -1
        while pos <= len(data):
            spans = self._rx.Match(_UNANCHORED, data, pos, len(data))
            if spans[0] == _NO_SPAN:
                return
            begin, end = spans[0]
            accept = not (begin == end == prev_end)
            if end == pos:
                pos += _rune_len(data, pos)
            else:
                pos = end
            prev_end = end
            if accept:
                yield GoMatch(text, [_char_span(data, sp) for sp in spans], self)

    def __repr__(self) -> str:
        return f"GoRegexp({self.pattern!r})"


def _char_span(data: bytes, span: tuple[int, int]) -> tuple[int, int]:
    """A byte span of UTF-8 `data` as a str span (RE2 in UTF-8 mode matches whole characters)."""
    a, b = span
    if a < 0:
        return span
    return len(data[:a].decode("utf-8")), len(data[:b].decode("utf-8"))


def _rune_len(data: bytes, pos: int) -> int:
    if pos >= len(data) or data[pos] < 0x80:
        return 1
    return 2 if data[pos] < 0xE0 else 3 if data[pos] < 0xF0 else 4


def _utf8able(text: str) -> str:
    """`text` with lone surrogates (from JSON `\\ud800` escapes) as U+FFFD, as Go decodes them."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "".join("\ufffd" if "\ud800" <= ch <= "\udfff" else ch for ch in text)
    return text


@lru_cache(maxsize=4096)
def _compile(pattern: str, angle_named_groups: bool) -> GoRegexp | str:
    try:
        rx = _re2.RE2(pattern.encode("utf-8"), _OPTIONS)
    except UnicodeEncodeError:
        return _go_message("invalid UTF-8", pattern)
    if not rx.ok():
        return _from_re2(rx.error().decode("utf-8", "replace"), pattern, angle_named_groups)
    if _plain(pattern):
        return GoRegexp(pattern, rx, ())
    try:
        scan = _scan(pattern, angle_named_groups)
    except _GoLimit as exc:
        return str(exc)
    if scan.problem:
        return scan.problem
    return GoRegexp(pattern, rx, scan.names)


_PLAIN_MAX_LEN = 900  # below MAX_HEIGHT: a pattern this short cannot nest deeper than Go allows


def _plain(pattern: str) -> bool:
    """Whether the pre-scan has nothing to find: no `\\C`, no named group (no names, no `(?<` version rule), no
    counted repeat (the only way to a Go size limit), and too short to nest past Go's height limit. Most relabel
    regexes are like that; the scan is pure Python and costs ~0.2 ms a pattern (seconds for a big cluster)."""
    return (len(pattern) < _PLAIN_MAX_LEN and "{" not in pattern and "\\C" not in pattern
            and "(?P<" not in pattern and "(?<" not in pattern)


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


# --- the pre-scan: \C, (?<name>, repeat counts, nesting height, size ----------------------

_MAX_SIZE = (128 << 20) // 40  # Go's maxSize: 128 MiB of 40-byte instructions
_CLASS_ESCAPES = set("dDsSwWpPbBAz")


class _Frame:
    """One open group while scanning: finished alternatives and the current concatenation.

    Items are [height, size] as Go's calcHeight/calcSize would give the parse-tree node.
    """

    __slots__ = ("capture", "alts", "items", "last_literal")

    def __init__(self, capture: bool):
        self.capture = capture
        self.alts: list[list[int]] = []
        self.items: list[list[int]] = []
        self.last_literal = False  # Go merges a run of literal runes into one node

    def add(self, height: int, size: int = 1, literal: bool = False) -> None:
        if literal and self.last_literal:
            self.items[-1][1] += 1
            return
        self.items.append([height, size])
        self.last_literal = literal

    def repeat(self, lo: int, hi: int, op: str) -> None:
        """Apply `*`, `+`, `?` or `{lo,hi}` (hi -1: no maximum) to the last atom."""
        if not self.items:
            return
        if self.last_literal and self.items[-1][1] > 1:  # applies to the last rune only
            self.items[-1][1] -= 1
            self.items.append([1, 1])
        h, sub = self.items[-1]
        if op in "*":
            size = 2 + sub
        elif op in "+?":
            size = 1 + sub
        elif hi == -1:
            size = 2 + sub if lo == 0 else 1 + lo * sub
        else:
            size = hi * sub + (hi - lo)
        self.items[-1] = [h + 1, max(1, size)]
        self.last_literal = False

    def end_concat(self) -> None:
        items = self.items
        if not items:
            self.alts.append([1, 1])
        else:
            height = max(i[0] for i in items) + (1 if len(items) > 1 else 0)
            self.alts.append([height, max(1, sum(i[1] for i in items))])
        self.items, self.last_literal = [], False

    def close(self) -> list[int]:
        self.end_concat()
        alts = self.alts
        height = max(a[0] for a in alts) + (1 if len(alts) > 1 else 0)
        size = sum(a[1] for a in alts) + len(alts) - 1
        return [height + 1, size + 2] if self.capture else [height, size]


def _go_int(digits: str) -> int | None:
    """Go's parseInt: None for a leading zero (then the braces are literal text), -1 if >= 1e8."""
    if len(digits) > 1 and digits[0] == "0":
        return None
    return -1 if len(digits) > 8 else int(digits)


def _parse_repeat(s: str, i: int) -> tuple[int, int, int] | None:
    """(min, max, end) of a `{n}`, `{n,}` or `{n,m}` at s[i] (max -1: none), None if literal."""
    j = i + 1
    while j < len(s) and "0" <= s[j] <= "9":
        j += 1
    if j == i + 1 or j >= len(s) or (lo := _go_int(s[i + 1:j])) is None:
        return None
    if s[j] == "}":
        return lo, lo, j + 1
    if s[j] != ",":
        return None
    k = j + 1
    while k < len(s) and "0" <= s[k] <= "9":
        k += 1
    if k >= len(s) or s[k] != "}":
        return None
    if k == j + 1:
        return lo, -1, k + 1
    hi = _go_int(s[j + 1:k])
    if hi is None:
        return None
    return (-1 if hi < 0 else lo), hi, k + 1  # Go: a too-big maximum makes the minimum -1


def _escape_end(s: str, i: int) -> int:
    """End of the escape starting with the backslash at s[i] (`\\x{..}`, `\\p{..}`)."""
    c = s[i + 1] if i + 1 < len(s) else ""
    if c in ("x", "p", "P") and s[i + 2:i + 3] == "{":
        end = s.find("}", i + 3)
        return len(s) if end < 0 else end + 1
    if c == "x":
        return i + 4
    if c in ("p", "P"):
        return i + 3
    return i + 2


def _class_end(s: str, i: int) -> tuple[int, bool]:
    """End of the character class starting at s[i] (`[`), and whether it holds a `\\C`."""
    j = i + 1
    if s[j:j + 1] == "^":
        j += 1
    first, has_c = True, False
    while j < len(s) and (s[j] != "]" or first):
        first = False
        if s.startswith("[:", j) and s.find(":]", j + 2) >= 0:
            j = s.find(":]", j + 2) + 2
        elif s[j] == "\\":
            has_c = has_c or s[j + 1:j + 2] == "C"
            j = _escape_end(s, j)
        else:
            j += 1
    return j + 1, has_c


def _scan(s: str, angle_named_groups: bool) -> _Scan:
    """Go-only checks on a pattern RE2 accepted, with the capture names in order."""
    names: list[str] = []
    stack = [_Frame(capture=False)]
    i, n = 0, len(s)
    while i < n:
        c = s[i]
        top = stack[-1]
        if c == "\\":
            nxt = s[i + 1:i + 2]
            if nxt == "C":
                return _Scan(_go_message("invalid escape sequence", "\\C"), ())
            if nxt == "Q":
                end = s.find("\\E", i + 2)
                end = n if end < 0 else end
                for _ in range(end - i - 2):
                    top.add(1, literal=True)
                i = end + 2
                continue
            top.add(1, literal=nxt not in _CLASS_ESCAPES)
            i = _escape_end(s, i)
        elif c == "[":
            i, has_c = _class_end(s, i)
            if has_c:
                return _Scan(_go_message("invalid escape sequence", "\\C"), ())
            top.add(1)
        elif c == "(":
            i, problem = _open_group(s, i, stack, names, angle_named_groups)
            if problem:
                return _Scan(problem, ())
        elif c == ")":
            closed = _checked(stack.pop().close(), s)
            stack[-1].add(*closed)
            i += 1
        elif c == "|":
            top.end_concat()
            i += 1
        elif c in "*+?":
            top.repeat(0, 0, c)
            i += 2 if s[i + 1:i + 2] == "?" else 1
        elif c == "{" and (rep := _parse_repeat(s, i)) is not None:
            lo, hi, end = rep
            if lo < 0 or lo > 1000 or hi > 1000 or (hi >= 0 and lo > hi):
                return _Scan(_go_message("invalid repeat count", s[i:end]), ())
            top.repeat(lo, hi, "{")
            i = end + (1 if s[end:end + 1] == "?" else 0)
        else:
            top.add(1, literal=c not in ".^$")
            i += 1
        if top.items and (top.items[-1][0] > MAX_HEIGHT or top.items[-1][1] > _MAX_SIZE):
            _checked(top.items[-1], s)
    _checked(stack[0].close(), s)
    return _Scan(None, tuple(names))


def _checked(node: list[int], s: str) -> list[int]:
    """Go's checkHeight/checkSize on one node."""
    if node[0] > MAX_HEIGHT:
        raise _GoLimit(_go_message("expression nests too deeply", s))
    if node[1] > _MAX_SIZE:
        raise _GoLimit(_go_message("expression too large", s))
    return node


class _GoLimit(Exception):
    pass


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
        name = s[s.index("<", i) + 1:end]
        if not (name.isascii() and name.replace("_", "a").isalnum()):  # Go: [A-Za-z0-9_]+, RE2 allows more
            return i, _go_message("invalid named capture", s[i:end + 1])
        names.append(name)
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
