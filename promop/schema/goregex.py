"""Go `regexp` patterns (what the apiserver checks `pattern` with) as Python `re` patterns.

The differences that matter for CRD patterns:
- Go's `$` is the end of the text; Python's also matches before a final newline.
- Go's `\\d`, `\\w`, `\\s` and `\\b` are ASCII-only (`re.ASCII`).
- Go accepts a flag group such as `(?i)` anywhere, meaning "from here to the end of the
  enclosing group"; Python 3.11+ accepts global flags only at the very start. We rewrite
  `A|X(?i)B|C` (inside one group) as `A|X(?i:B)|(?i:C)`, which means the same.

A pattern this cannot translate gives None from `compile_go`; callers then skip the check
rather than reject on a guess.
"""

from __future__ import annotations

import re
from functools import lru_cache

_FLAG_GROUP = re.compile(r"\(\?([imsU]+)\)")


def _split_top(body: str) -> list[str]:
    """Split one group's body at its top-level `|` (not inside nested groups or classes)."""
    parts, depth, start, i, in_class = [], 0, 0, 0, False
    while i < len(body):
        c = body[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            if c == "]":
                in_class = False
        elif c == "[":
            in_class = True
            if body[i + 1:i + 2] == "]":
                i += 1
            elif body[i + 1:i + 3] == "^]":
                i += 2
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "|" and depth == 0:
            parts.append(body[start:i])
            start = i + 1
        i += 1
    parts.append(body[start:])
    return parts


def _find_close(s: str, open_at: int) -> int:
    """Index of the `)` that closes the group opened at `open_at`."""
    depth, i, in_class = 0, open_at, False
    while i < len(s):
        c = s[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            if c == "]":
                in_class = False
        elif c == "[":
            in_class = True
            if s[i + 1:i + 2] == "]":
                i += 1
            elif s[i + 1:i + 3] == "^]":
                i += 2
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    raise ValueError("unbalanced parentheses")


def _scope_flags(body: str) -> str:
    """Rewrite bare flag groups in one group body (recursively) into scoped ones."""
    out_alts = []
    flags_on: str | None = None
    for alt in _split_top(body):
        alt = _rewrite_nested(alt)
        if flags_on is not None:
            alt = f"(?{flags_on}:{alt})"
        else:
            m = _first_top_flag(alt)
            if m is not None:
                pos, end, flags = m
                alt = f"{alt[:pos]}(?{flags}:{alt[end:]})"
                flags_on = flags
        out_alts.append(alt)
    return "|".join(out_alts)


def _first_top_flag(alt: str) -> tuple[int, int, str] | None:
    depth, i, in_class = 0, 0, False
    while i < len(alt):
        c = alt[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            if c == "]":
                in_class = False
        elif c == "[":
            in_class = True
        elif c == "(":
            if depth == 0:
                m = _FLAG_GROUP.match(alt, i)
                if m:
                    return i, m.end(), m.group(1)
            depth += 1
        elif c == ")":
            depth -= 1
        i += 1
    return None


def _rewrite_nested(alt: str) -> str:
    """Apply _scope_flags inside every group of `alt` (top-level flag groups left as they are)."""
    out, i, in_class = [], 0, False
    while i < len(alt):
        c = alt[i]
        if c == "\\":
            out.append(alt[i:i + 2])
            i += 2
            continue
        if in_class:
            out.append(c)
            if c == "]":
                in_class = False
            i += 1
            continue
        if c == "[":
            in_class = True
            out.append(c)
            i += 1
            continue
        if c == "(" and not _FLAG_GROUP.match(alt, i):
            close = _find_close(alt, i)
            inner = alt[i + 1:close]
            prefix = ""
            m = re.match(r"\?(?:P?<[^>]*>|[imsU-]*:|:)", inner)
            if m:
                prefix, inner = inner[:m.end()], inner[m.end():]
            out.append("(" + prefix + _scope_flags(inner) + ")")
            i = close + 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _dollar_to_end(pattern: str) -> str:
    """Go's `$` (without the m flag) is `\\Z` in Python."""
    out, i, in_class = [], 0, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            out.append(pattern[i:i + 2])
            i += 2
            continue
        if in_class:
            if c == "]":
                in_class = False
        elif c == "[":
            in_class = True
        elif c == "$":
            out.append(r"\Z")
            i += 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


@lru_cache(maxsize=1024)
def compile_go(pattern: str) -> re.Pattern[str] | None:
    """Compile a Go regexp as Python; None when it cannot be translated faithfully."""
    if "(?m" in pattern or "(?U" in pattern or "\\z" in pattern:
        return None
    try:
        translated = _dollar_to_end(_scope_flags(pattern))
        return re.compile(translated, re.ASCII)
    except (re.error, ValueError, IndexError):
        return None
