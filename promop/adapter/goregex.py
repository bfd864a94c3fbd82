"""Go `regexp` patterns (RE2) run with Python's `re`, and Go's `Regexp.Expand`.

prometheus-adapter's `seriesFilters` and `name.matches` are Go regexps, searched
unanchored (`MatchString`), and `name.as` is expanded with Go's `$1`/`${name}`
rules. RE2 is checked first (promop.render.re2) so a pattern Go would refuse
is refused here too; the few RE2 spellings Python lacks are translated.
"""

from __future__ import annotations

import re

from promop.render.re2 import check_re2

_POSIX = {
    "alnum": "0-9A-Za-z", "alpha": "A-Za-z", "ascii": "\\x00-\\x7F", "blank": "\\t ",
    "cntrl": "\\x00-\\x1F\\x7F", "digit": "0-9", "graph": "!-~", "lower": "a-z", "print": " -~",
    "punct": "!-/:-@\\[-`{-~", "space": "\\t\\n\\v\\f\\r ", "upper": "A-Z", "word": "0-9A-Za-z_",
    "xdigit": "0-9A-Fa-f",
}


class RegexError(ValueError):
    pass


def _translate(pattern: str) -> str:
    out = []
    i = 0
    n = len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            nxt = pattern[i + 1]
            if nxt == "z":
                out.append("\\Z")
                i += 2
                continue
            if nxt == "Q":
                end = pattern.find("\\E", i + 2)
                literal = pattern[i + 2 :] if end < 0 else pattern[i + 2 : end]
                out.append(re.escape(literal))
                i = n if end < 0 else end + 2
                continue
            if nxt == "x" and pattern[i + 2 : i + 3] == "{":
                end = pattern.find("}", i + 3)
                out.append("\\U%08x" % int(pattern[i + 3 : end], 16))
                i = end + 1
                continue
            out.append(pattern[i : i + 2])
            i += 2
            continue
        if c == "[" and pattern.startswith("[:", i):
            end = pattern.find(":]", i + 2)
            if end > 0:
                name = pattern[i + 2 : end]
                if name.startswith("^"):
                    raise RegexError(f"negated POSIX class [:{name}:] is not supported here; write the set out")
                chars = _POSIX.get(name)
                if chars is not None:
                    out.append(chars)
                    i = end + 2
                    continue
        out.append(c)
        i += 1
    return "".join(out)


def compile_go(pattern: str) -> re.Pattern[str]:
    """Compile a Go regexp; RegexError says why Go (or we) would refuse it."""
    problem = check_re2(pattern)
    if problem:
        raise RegexError(f"invalid regular expression {pattern!r}: {problem}")
    try:
        return re.compile(_translate(pattern))
    except re.error as exc:
        raise RegexError(f"invalid regular expression {pattern!r}: {exc}") from None


_NAME = re.compile(r"[A-Za-z0-9_]+")


def expand(template: str, regex: re.Pattern[str], m: re.Match[str]) -> str:
    """Go's `Regexp.ExpandString`: `$1`, `${1}`, `$name`, `${name}`, `$$`.

    As in Go, `$1x` means the group named `1x`, and an unknown group expands to "".
    """
    out = []
    i = 0
    while i < len(template):
        c = template[i]
        if c != "$" or i + 1 >= len(template):
            out.append(c)
            i += 1
            continue
        nxt = template[i + 1]
        if nxt == "$":
            out.append("$")
            i += 2
            continue
        if nxt == "{":
            end = template.find("}", i + 2)
            name = template[i + 2 : end] if end > 0 else ""
            if end < 0 or not _NAME.fullmatch(name):
                out.append("$")
                i += 1
                continue
            i = end + 1
        else:
            nm = _NAME.match(template, i + 1)
            if not nm:
                out.append("$")
                i += 1
                continue
            name = nm.group()
            i = nm.end()
        out.append(_group(regex, m, name))
    return "".join(out)


def _group(regex: re.Pattern[str], m: re.Match[str], name: str) -> str:
    if name.isdigit():
        idx = int(name)
        if idx <= regex.groups:
            return m.group(idx) or ""
        return ""
    if name in regex.groupindex:
        return m.group(name) or ""
    return ""
