"""A syntax checker for Go text/template, as Prometheus uses in alert labels and annotations.

Prometheus refuses a whole rule file when one template does not parse, so a
PrometheusRule with a broken template must be rejected before it reaches the
ConfigMap. This checks what Go's template parser checks at parse time: closed
actions and comments, balanced parentheses and control blocks, known functions
and declared variables. It does not type-check (neither does Go at parse time).
"""

from __future__ import annotations

import re

# Go's builtins plus Prometheus's template functions (union over 2.x and 3.x).
KNOWN_FUNCTIONS = frozenset(
    """
    and call html index slice js len not or print printf println urlquery eq ge gt le lt ne
    query first label value strvalue args reReplaceAll safeHtml match title toUpper toLower
    graphLink tableLink sortByLabel humanize humanize1024 humanizeDuration humanizePercentage
    humanizeTimestamp toTime toDuration now pathPrefix externalURL parseDuration stripPort
    stripDomain urlQueryEscape
    """.split()
)
# Functions newer than the rest: Prometheus refuses templates using them before these versions.
FUNCTION_MIN_VERSION = {"toDuration": (3, 6, 0), "now": (3, 6, 0), "urlQueryEscape": (3, 8, 0)}
CONSTANTS = frozenset({"true", "false", "nil"})
# Variables Prometheus defines before expanding an alert's labels and annotations.
PREDEFINED_VARIABLES = frozenset({"$", "$labels", "$externalLabels", "$externalURL", "$value"})

_BLOCK_OPENERS = frozenset({"if", "range", "with", "define", "block"})
_KEYWORDS = _BLOCK_OPENERS | {"else", "end", "template", "break", "continue"}

_TOKEN = re.compile(
    r"""
    (?P<space>\s+)
  | (?P<string>"(?:[^"\\\n]|\\.)*")
  | (?P<raw>`[^`]*`)
  | (?P<char>'(?:[^'\\\n]|\\.)+')
  | (?P<decl>:=)
  | (?P<assign>=)
  | (?P<pipe>\|)
  | (?P<lparen>\()
  | (?P<rparen>\))
  | (?P<comma>,)
  | (?P<var>\$[A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)*)
  | (?P<field>(?:\.[A-Za-z_][A-Za-z0-9_]*)+)
  | (?P<dot>\.)
  | (?P<number>[-+]?(?:0[xXbBoO][0-9a-fA-F_]+|[0-9][0-9_]*(?:\.[0-9_]*)?(?:[eE][-+]?[0-9]+)?|\.[0-9]+)i?)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)
    """,
    re.VERBOSE,
)


class TemplateError(ValueError):
    """A template Go's text/template would refuse to parse."""


_SPACE = " \t\r\n"


def scan(text: str, left: str = "{{", right: str = "}}") -> list[tuple[str, int, str]]:
    """Split a template into ("text", line, literal) and ("action", line, inner) segments.

    Comments are dropped and trim markers (`{{- `, ` -}}`) already applied to the
    neighbouring text. Raises TemplateError on unclosed actions and comments.
    The delimiters are configurable, as Go's `Delims` (prometheus-adapter uses `<<`/`>>`).
    """
    out: list[tuple[str, int, str]] = []
    pos = 0
    trim_next = False
    while True:
        start = text.find(left, pos)
        if start < 0:
            literal = text[pos:]
            out.append(("text", text.count("\n", 0, pos) + 1, literal.lstrip(_SPACE) if trim_next else literal))
            return [seg for seg in out if seg[0] != "text" or seg[2]]
        line = text.count("\n", 0, start) + 1
        literal = text[pos:start]
        if trim_next:
            literal = literal.lstrip(_SPACE)
        i = start + len(left)
        if text[i : i + 1] == "-" and text[i + 1 : i + 2] in tuple(_SPACE):
            literal = literal.rstrip(_SPACE)
            i += 2
        out.append(("text", line, literal))
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                raise TemplateError(f"line {line}: unclosed comment")
            rest = text[end + 2 :]
            trimmed = rest.lstrip(_SPACE) if rest[:1] in tuple(_SPACE) else rest
            if trimmed.startswith("-" + right) and rest[:1] in tuple(_SPACE):
                pos = len(text) - len(trimmed) + 1 + len(right)
                trim_next = True
            elif rest.startswith(right):
                pos = end + 2 + len(right)
                trim_next = False
            else:
                raise TemplateError(f"line {line}: comment ends before closing delimiter")
            continue
        j = i
        quote = ""
        while True:
            if j >= len(text):
                raise TemplateError(f"line {line}: unclosed action")
            c = text[j]
            if quote:
                if c == "\\" and quote != "`":
                    j += 2
                    continue
                if c == "\n" and quote != "`":
                    raise TemplateError(f"line {line}: unterminated quoted string")
                if c == quote:
                    quote = ""
            elif c in "\"'`":
                quote = c
            elif text.startswith(right, j):
                break
            j += 1
        inner = text[i:j]
        trim_next = inner.endswith(tuple(c + "-" for c in _SPACE))
        if trim_next:
            inner = inner[:-2]
        out.append(("action", line, inner))
        pos = j + len(right)


def _split_actions(text: str, left: str = "{{", right: str = "}}") -> list[tuple[int, str]]:
    """(line, inner text) of each non-comment action; raises on unclosed actions/comments."""
    return [(line, value) for kind, line, value in scan(text, left, right) if kind == "action"]


def tokens(line: int, inner: str) -> list[tuple[str, str]]:
    out = []
    pos = 0
    while pos < len(inner):
        m = _TOKEN.match(inner, pos)
        if not m or m.end() == pos:
            raise TemplateError(f"line {line}: unexpected {inner[pos]!r} in action {{{{{inner.strip()}}}}}")
        kind = m.lastgroup or ""
        if kind != "space":
            out.append((kind, m.group()))
        pos = m.end()
    return out


def functions_for(version: tuple[int, int, int]) -> frozenset[str]:
    """The template functions a Prometheus of `version` (major, minor, patch) knows."""
    return frozenset(f for f in KNOWN_FUNCTIONS if FUNCTION_MIN_VERSION.get(f, (0, 0, 0)) <= version)


class _Checker:
    def __init__(self, variables: frozenset[str], functions: frozenset[str]):
        self.functions = functions
        self.scopes: list[set[str]] = [set(variables)]
        self.blocks: list[str] = []

    def declared(self, var: str) -> bool:
        return any(var in s for s in self.scopes)

    def check_action(self, line: int, inner: str) -> None:
        toks = tokens(line, inner)
        where = f"line {line}: {{{{{inner.strip()}}}}}"
        if not toks:
            raise TemplateError(f"{where}: missing value for command")
        kind, word = toks[0]
        if kind == "ident" and word in _KEYWORDS:
            self._keyword(where, word, toks[1:])
        else:
            self._pipeline(where, toks, allow_decl=True)

    def _keyword(self, where: str, word: str, rest: list[tuple[str, str]]) -> None:
        if word == "end":
            if rest:
                raise TemplateError(f"{where}: unexpected {rest[0][1]!r} in end")
            if not self.blocks:
                raise TemplateError(f"{where}: unexpected {{{{end}}}}")
            self.blocks.pop()
            self.scopes.pop()
        elif word == "else":
            if not self.blocks or self.blocks[-1] not in ("if", "with", "range"):
                raise TemplateError(f"{where}: unexpected {{{{else}}}}")
            if rest:
                if rest[0] != ("ident", "if") and rest[0] != ("ident", "with"):
                    raise TemplateError(f"{where}: unexpected {rest[0][1]!r} after else")
                self._pipeline(where, rest[1:], allow_decl=True, required=rest[0][1])
        elif word in ("break", "continue"):
            if "range" not in self.blocks:
                raise TemplateError(f"{where}: {{{{{word}}}}} outside {{{{range}}}}")
            if rest:
                raise TemplateError(f"{where}: unexpected {rest[0][1]!r} in {word}")
        elif word in ("define", "block", "template"):
            if not rest or rest[0][0] not in ("string", "raw"):
                raise TemplateError(f"{where}: {word} needs a quoted template name")
            if word == "block":
                self._pipeline(where, rest[1:], allow_decl=False, required=word)
            elif word == "template" and len(rest) > 1:
                self._pipeline(where, rest[1:], allow_decl=False)
            elif word == "define" and len(rest) > 1:
                raise TemplateError(f"{where}: unexpected {rest[1][1]!r} in define clause")
            if word in ("define", "block"):
                self.blocks.append(word)
                self.scopes.append(set())
        else:  # if, range, with
            self.scopes.append(set())
            self._pipeline(where, rest, allow_decl=True, required=word)
            self.blocks.append(word)

    def _pipeline(
        self, where: str, toks: list[tuple[str, str]], allow_decl: bool, required: str = ""
    ) -> None:
        if not toks:
            raise TemplateError(f"{where}: missing value for {required or 'command'}")
        # Declarations: $x := ..., $x = ..., $i, $e := range ...
        decl_end = next((i for i, t in enumerate(toks) if t[0] in ("decl", "assign")), -1)
        if decl_end > 0 and allow_decl:
            names = toks[:decl_end]
            if not all(k in ("var", "comma") for k, _ in names):
                raise TemplateError(f"{where}: unexpected {toks[decl_end][1]!r}")
            declared = [v for k, v in names if k == "var"]  # Go does not check `$x = ...` at parse time
            toks = toks[decl_end + 1 :]
            if not toks:
                raise TemplateError(f"{where}: missing value for {required or 'command'}")
            if toks[0][0] in ("decl", "assign"):
                raise TemplateError(f"{where}: unexpected {toks[0][1]!r}")
            self._commands(where, toks)
            self.scopes[-1].update(declared)
            return
        self._commands(where, toks)

    def _commands(self, where: str, toks: list[tuple[str, str]]) -> None:
        # Go accepts an empty last command after a pipe (`{{ $x | }}`), not an empty first one.
        depth = 0
        command_len = 0
        after_pipe = False
        for kind, text in toks:
            if kind in ("decl", "assign", "comma"):
                raise TemplateError(f"{where}: unexpected {text!r} in command")
            if kind == "pipe":
                if command_len == 0:
                    raise TemplateError(f"{where}: unexpected \"|\" (empty command)")
                command_len, after_pipe = 0, True
                continue
            if kind == "lparen":
                depth += 1
                command_len, after_pipe = 0, False
                continue
            if kind == "rparen":
                if depth == 0:
                    raise TemplateError(f"{where}: unexpected right paren")
                if command_len == 0 and not after_pipe:
                    raise TemplateError(f"{where}: missing value for parenthesized pipeline")
                depth -= 1
                command_len, after_pipe = 1, False
                continue
            command_len += 1
            after_pipe = False
            if kind == "ident":
                base = text.split(".", 1)[0]
                if base in _KEYWORDS:
                    raise TemplateError(f"{where}: unexpected keyword {base!r} in command")
                if base not in self.functions and base not in CONSTANTS:
                    newer = FUNCTION_MIN_VERSION.get(base)
                    hint = f" (needs Prometheus >= {'.'.join(map(str, newer))})" if newer else ""
                    raise TemplateError(f"{where}: function {base!r} not defined{hint}")
            elif kind == "var":
                base = text.split(".", 1)[0]
                if not self.declared(base):
                    raise TemplateError(f"{where}: undefined variable {base!r}")
        if depth:
            raise TemplateError(f"{where}: unclosed left paren")
        if command_len == 0 and not after_pipe:
            raise TemplateError(f"{where}: missing value for command")

    def finish(self) -> None:
        if self.blocks:
            raise TemplateError(f"unexpected EOF: {{{{{self.blocks[-1]}}}}} has no matching {{{{end}}}}")


def check_template(text: str, variables: frozenset[str] = PREDEFINED_VARIABLES,
                   functions: frozenset[str] = KNOWN_FUNCTIONS, delims: tuple[str, str] = ("{{", "}}")) -> None:
    """Raise TemplateError (with line and action) if Go's text/template would refuse `text`."""
    if delims[0] not in text:
        return
    checker = _Checker(variables, functions)
    for line, inner in _split_actions(text, *delims):
        checker.check_action(line, inner)
    checker.finish()
