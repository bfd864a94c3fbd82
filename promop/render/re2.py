"""Does Go's `regexp` (RE2 syntax) accept a regex? Prometheus compiles relabel regexes with it.

Python's `re` accepts constructs RE2 refuses (lookarounds, backreferences,
possessive quantifiers, atomic groups, ...) and vice versa, so `re.compile` is
no check. This is a small scanner for the RE2 grammar as Go implements it; it
returns the first problem as a sentence, or None.
"""

from __future__ import annotations

_MAX_REPEAT = 1000
_FLAGS = set("imsU")
_CLASS_ESCAPES = set("dDsSwW")
_ASSERT_ESCAPES = set("AbBz")
_SIMPLE_ESCAPES = set("afnrtv")
_POSIX_CLASSES = {
    "alnum", "alpha", "ascii", "blank", "cntrl", "digit", "graph",
    "lower", "print", "punct", "space", "upper", "word", "xdigit",
}
_UNSUPPORTED_ESCAPES = {
    "Z": r"\Z is not supported; use \z (end of text)",
    "G": r"\G is not supported",
    "K": r"\K is not supported",
    "R": r"\R is not supported; use (?:\r\n|\n|\r)",
    "X": r"\X is not supported",
    "h": r"\h is not supported; use [ \t]",
    "e": r"\e is not supported; use \x1b",
    "c": r"\c control escapes are not supported; use \x..",
    "u": r"\u escapes are not supported; use \x{....}",
    "U": r"\U escapes are not supported; use \x{....}",
    "N": r"\N escapes are not supported",
    "k": r"\k<name> backreferences are not supported by RE2",
    "g": r"\g backreferences are not supported by RE2",
}


class _Scanner:
    def __init__(self, text: str):
        self.s = text
        self.i = 0
        self.angle_named_groups = False

    def error(self, msg: str) -> str:
        return f"{msg} (at offset {self.i} of {self.s!r}); Prometheus uses RE2 syntax, see https://github.com/google/re2/wiki/Syntax"

    def peek(self, n: int = 0) -> str:
        j = self.i + n
        return self.s[j] if j < len(self.s) else ""


def check_re2(regex: str, angle_named_groups: bool = False) -> str | None:
    """None if RE2 (Go regexp) accepts `regex`, else why not.

    `angle_named_groups`: accept `(?<name>...)` (Go >= 1.22, i.e. Prometheus 3).
    """
    sc = _Scanner(regex)
    sc.angle_named_groups = angle_named_groups
    depth = 0
    can_repeat = False  # is there an atom a quantifier could apply to?
    last_was_quant = False
    s = regex
    n = len(s)
    while sc.i < n:
        c = s[sc.i]
        if c == "\\":
            err, is_atom = _escape(sc, in_class=False)
            if err:
                return err
            can_repeat, last_was_quant = is_atom, False
            continue
        if c == "[":
            err = _char_class(sc)
            if err:
                return err
            can_repeat, last_was_quant = True, False
            continue
        if c == "(":
            err, opens = _group_open(sc)
            if err:
                return err
            depth += opens
            can_repeat, last_was_quant = False, False
            continue
        if c == ")":
            if depth == 0:
                return sc.error("unexpected ')': no group is open")
            depth -= 1
            sc.i += 1
            can_repeat, last_was_quant = True, False
            continue
        if c == "|":
            sc.i += 1
            can_repeat, last_was_quant = False, False
            continue
        if c in "*+?" or (c == "{" and _repeat_len(s, sc.i)):
            length = 1 if c != "{" else _repeat_len(s, sc.i)
            if c == "{":
                err = _check_counts(sc, s[sc.i + 1 : sc.i + length - 1])
                if err:
                    return err
            op = s[sc.i : sc.i + length]
            if last_was_quant:
                if op == "+":
                    return sc.error("possessive quantifiers (e.g. a*+) are not supported")
                return sc.error(f"invalid nested repetition operator {op!r}")
            if not can_repeat:
                return sc.error(f"missing argument to repetition operator {op!r}")
            sc.i += length
            if sc.peek() == "?":  # non-greedy
                sc.i += 1
            last_was_quant = True
            continue
        sc.i += 1  # literal, '.', '^', '$'
        can_repeat = c not in "^$"
        last_was_quant = False
    if depth:
        return sc.error("missing closing ')'")
    return None


def _repeat_len(s: str, i: int) -> int:
    """Length of a `{n}`, `{n,}` or `{n,m}` repeat at i, or 0 if `{` is a literal there (as in Go)."""
    j = i + 1
    start = j
    while j < len(s) and s[j].isdigit():
        j += 1
    if j == start:
        return 0
    if j < len(s) and s[j] == ",":
        j += 1
        while j < len(s) and s[j].isdigit():
            j += 1
    if j < len(s) and s[j] == "}":
        return j - i + 1
    return 0


def _check_counts(sc: _Scanner, body: str) -> str | None:
    lo, _, hi = body.partition(",")
    lo_n = int(lo)
    hi_n = int(hi) if hi else lo_n
    if lo_n > _MAX_REPEAT or hi_n > _MAX_REPEAT:
        return sc.error(f"repeat count {{{body}}} is over RE2's limit of {_MAX_REPEAT}")
    if hi and hi_n < lo_n:
        return sc.error(f"invalid repeat count {{{body}}}: maximum below minimum")
    return None


def _group_open(sc: _Scanner) -> tuple[str | None, bool]:
    """Scan `(`, `(?flags)`, `(?flags:` or `(?P<name>`; returns (error, opens_a_group)."""
    s, i = sc.s, sc.i
    if s.startswith("(?", i):
        rest = s[i + 2 :]
        if rest.startswith("P<") or (sc.angle_named_groups and rest.startswith("<") and rest[1:2] not in ("=", "!")):
            start = i + (4 if rest.startswith("P<") else 3)
            end = s.find(">", start)
            name = s[start:end] if end != -1 else ""
            if end == -1 or not name or not all(ch.isalnum() or ch == "_" for ch in name):
                return sc.error("invalid named capture group; use (?P<name>...)"), False
            sc.i = end + 1
            return None, True
        for prefix, what in (
            ("=", "lookahead (?=...)"),
            ("!", "negative lookahead (?!...)"),
            ("<=", "lookbehind (?<=...)"),
            ("<!", "negative lookbehind (?<!...)"),
            (">", "atomic group (?>...)"),
            ("#", "comment group (?#...)"),
            ("(", "conditional group (?(...)...)"),
            ("P=", "named backreference (?P=name)"),
            ("P>", "recursion (?P>name)"),
            ("R", "recursion (?R)"),
            ("|", "branch reset group (?|...)"),
        ):
            if rest.startswith(prefix):
                return sc.error(f"{what} is not supported by RE2"), False
        if rest.startswith("<"):
            return sc.error("named group (?<name>...) is not supported by the Go versions Prometheus uses; use (?P<name>...)"), False
        if rest[:1].isdigit() or rest[:1] in "+-" and rest[1:2].isdigit():
            return sc.error("recursion or subroutine calls (?1) are not supported by RE2"), False
        # flags: (?flags) or (?flags:...)
        j = i + 2
        seen_minus = False
        any_flag = False
        while j < len(s) and s[j] not in ":)":
            ch = s[j]
            if ch == "-":
                if seen_minus:
                    return sc.error("invalid flag group: repeated '-'"), False
                seen_minus = True
            elif ch in _FLAGS:
                any_flag = True
            else:
                return sc.error(f"unknown regex flag {ch!r}; RE2 supports i, m, s and U"), False
            j += 1
        if j >= len(s):
            return sc.error("missing closing ')' in flag group"), False
        if j == i + 2 and s[j] == ":":
            sc.i = j + 1
            return None, True  # (?:...) non-capturing group
        if not any_flag or s[j - 1] == "-":
            return sc.error("invalid or empty flag group"), False
        sc.i = j + 1
        return None, s[j] == ":"
    sc.i += 1
    return None, True


def _escape(sc: _Scanner, in_class: bool) -> tuple[str | None, bool]:
    """Scan an escape at sc.i; returns (error, is_repeatable_atom)."""
    s = sc.s
    if sc.i + 1 >= len(s):
        return sc.error("trailing backslash at end of expression"), False
    c = s[sc.i + 1]
    if c.isdigit():
        if c != "0" and not (c in "1234567" and sc.peek(2) in tuple("01234567")):
            return sc.error(f"backreference \\{c} is not supported by RE2"), False
        # \0 octal: up to two more octal digits.
        j = sc.i + 2
        while j < len(s) and j < sc.i + 4 and s[j] in "01234567":
            j += 1
        sc.i = j
        return None, True
    if c == "x":
        j = sc.i + 2
        if sc.peek(2) == "{":
            end = s.find("}", j)
            body = s[j + 1 : end] if end != -1 else ""
            if end == -1 or not body or not all(ch in "0123456789abcdefABCDEF" for ch in body) or int(body, 16) > 0x10FFFF:
                return sc.error("invalid \\x{...} escape"), False
            sc.i = end + 1
            return None, True
        body = s[j : j + 2]
        if len(body) != 2 or not all(ch in "0123456789abcdefABCDEF" for ch in body):
            return sc.error("invalid \\x escape: needs two hex digits or \\x{...}"), False
        sc.i = j + 2
        return None, True
    if c in "pP":
        j = sc.i + 2
        if sc.peek(2) == "{":
            end = s.find("}", j)
            if end == -1 or end == j + 1:
                return sc.error("invalid \\p{...} character class"), False
            sc.i = end + 1
        elif sc.peek(2) and sc.peek(2).isalpha():
            sc.i = j + 1
        else:
            return sc.error("invalid \\p escape"), False
        return None, True
    if c == "Q":
        end = s.find("\\E", sc.i + 2)
        sc.i = len(s) if end == -1 else end + 2
        return None, True
    if c in _CLASS_ESCAPES or c in _SIMPLE_ESCAPES:
        sc.i += 2
        return None, True
    if c in _ASSERT_ESCAPES and not in_class:
        sc.i += 2
        return None, False
    if c in _UNSUPPORTED_ESCAPES:
        return sc.error(_UNSUPPORTED_ESCAPES[c]), False
    if c.isascii() and not c.isalnum():
        sc.i += 2  # escaped punctuation is a literal
        return None, True
    return sc.error(f"invalid escape sequence \\{c}"), False


def _char_class(sc: _Scanner) -> str | None:
    s = sc.s
    start = sc.i
    sc.i += 1
    if sc.peek() == "^":
        sc.i += 1
    first = True
    while True:
        if sc.i >= len(s):
            sc.i = start
            return sc.error("missing closing ']' in character class")
        c = s[sc.i]
        if c == "]" and not first:
            sc.i += 1
            return None
        first = False
        if s.startswith("[:", sc.i):
            end = s.find(":]", sc.i + 2)
            if end != -1:
                name = s[sc.i + 2 : end].lstrip("^")
                if name not in _POSIX_CLASSES:
                    return sc.error(f"unknown POSIX class [:{name}:]")
                sc.i = end + 2
                continue
        if c == "\\":
            if sc.peek(1) in _CLASS_ESCAPES or sc.peek(1) in ("p", "P"):
                err, _ = _escape(sc, in_class=True)
                if err:
                    return err
                continue
            j = sc.i
            err, _ = _escape(sc, in_class=True)
            if err:
                return err
            lit = s[j + 1] if sc.i - j == 2 else None
            lit = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", "v": "\v", "a": "\a"}.get(lit, lit) if lit else None
        else:
            lit = c
            sc.i += 1
        # range a-z
        if lit is not None and sc.peek() == "-" and sc.peek(1) not in ("]", ""):
            lo = lit
            sc.i += 1
            if s[sc.i] == "\\":
                j = sc.i
                err, _ = _escape(sc, in_class=True)
                if err:
                    return err
                hi = s[j + 1] if sc.i - j == 2 else None
            else:
                hi = s[sc.i]
                sc.i += 1
            if hi is not None and len(lo) == 1 and len(hi) == 1 and ord(hi) < ord(lo):
                return sc.error(f"invalid character class range {lo}-{hi}")

