"""Executing Go text/template: the subset configuration files use.

prometheus-adapter's `metricsQuery` and `resources.template` are Go templates
(delimiters `<<`/`>>`) executed over a struct. This runs them the way Go does:
fields, variables, pipelines, `if`/`else if`/`range`/`with`/`break`/`continue`,
`define`/`template`/`block` (named templates within the one text), and Go's
builtin functions (`and or not len index slice print printf println eq ne lt
le gt ge html js urlquery`), printing values as Go's fmt would. `call` and
method calls are refused with a clear error.

Scanning is shared with the syntax checker in gotemplate.py.
"""

from __future__ import annotations

import html as _html
import math
import re
from dataclasses import dataclass, field
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import quote_plus

from promop.render.gotemplate import TemplateError, tokens, scan


class Struct(dict):
    """A Go struct: a field that does not exist is an error, not an empty value."""

    type_name = "struct"

    def __init__(self, type_name: str, **fields: Any) -> None:
        super().__init__(fields)
        self.type_name = type_name


class GoMap(dict):
    """A typed Go map: a missing key gives the element type's zero value (`""` for map[string]string)."""

    def __init__(self, items: Mapping[str, Any] | None = None, zero: Any = None) -> None:
        super().__init__(items or {})
        self.zero = zero


def _map_get(m: Mapping, key: Any) -> Any:
    return m.get(key, m.zero) if isinstance(m, GoMap) else m.get(key)


# -- printing as Go's fmt %v ------------------------------------------------------------


def go_float(v: float) -> str:
    """strconv.FormatFloat(v, 'g', -1, 64), which %v uses."""
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    if v == 0:
        return "-0" if math.copysign(1, v) < 0 else "0"
    digits = repr(v)  # shortest round-trip, like Go's
    mantissa, _, exp_text = digits.partition("e")
    sign = "-" if mantissa.startswith("-") else ""
    mantissa = mantissa.lstrip("-")
    int_part, _, frac = mantissa.partition(".")
    frac = "" if frac == "0" else frac
    all_digits = (int_part + frac).lstrip("0")
    # decimal exponent of the first significant digit
    if int_part.strip("0"):
        exp = len(int_part.lstrip("0")) - 1
    else:
        exp = -(len(frac) - len(frac.lstrip("0")) + 1)
    exp += int(exp_text or 0)
    all_digits = all_digits.rstrip("0") or "0"
    use_exp = exp < -4 or exp >= 6  # shortest %g decides with precision 6
    if use_exp:
        m = all_digits[0] + ("." + all_digits[1:] if len(all_digits) > 1 else "")
        return f"{sign}{m}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if exp >= 0:
        whole = all_digits[: exp + 1].ljust(exp + 1, "0")
        rest = all_digits[exp + 1 :]
        return sign + whole + ("." + rest if rest else "")
    return sign + "0." + "0" * (-exp - 1) + all_digits


def go_quote(s: str) -> str:
    """strconv.Quote: Go's %q of a string."""
    if s.isascii() and s.isprintable():  # the common case: only `"` and `\` need escaping
        return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'
    out = ['"']
    for ch in s:
        c = ord(ch)
        if ch == '"' or ch == "\\":
            out.append("\\" + ch)
        elif ch == "\a":
            out.append("\\a")
        elif ch == "\b":
            out.append("\\b")
        elif ch == "\f":
            out.append("\\f")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\v":
            out.append("\\v")
        elif c < 0x20 or c == 0x7F:
            out.append(f"\\x{c:02x}")
        elif c < 0x80 or ch.isprintable():
            out.append(ch)
        elif c < 0x10000:
            out.append(f"\\u{c:04x}")
        else:
            out.append(f"\\U{c:08x}")
    out.append('"')
    return "".join(out)


def go_sprint(v: Any) -> str:
    """fmt.Sprint of one value (%v)."""
    if v is None:
        return "<nil>"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return v
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return go_float(v)
    if isinstance(v, Struct):
        return "{" + " ".join(go_sprint(x) for x in v.values()) + "}"
    if isinstance(v, Mapping):
        return "map[" + " ".join(f"{go_sprint(k)}:{go_sprint(v[k])}" for k in sorted(v)) + "]"
    if isinstance(v, (list, tuple)):
        return "[" + " ".join(go_sprint(x) for x in v) + "]"
    return str(v)


def _print_value(v: Any) -> str:
    # text/template prints a missing value as "<no value>".
    return "<no value>" if v is None else go_sprint(v)


_VERB = re.compile(r"%([-+# 0]*)(\d+|\*)?(?:\.(\d+|\*))?([a-zA-Z%])")


def go_sprintf(fmt: str, *args: Any) -> str:
    """fmt.Sprintf for the common verbs: %s %v %d %q %f %g %e %x %t %%."""
    out = []
    pos = 0
    argi = 0
    for m in _VERB.finditer(fmt):
        out.append(fmt[pos : m.start()])
        pos = m.end()
        flags, width, prec, verb = m.groups()
        if verb == "%":
            out.append("%")
            continue
        if argi >= len(args):
            out.append(f"%!{verb}(MISSING)")
            continue
        a = args[argi]
        argi += 1
        if verb in "sv":
            text = go_sprint(a)
            if prec is not None and verb == "s":
                text = text[: int(prec)]
        elif verb == "q":
            text = go_quote(a if isinstance(a, str) else go_sprint(a))
        elif verb == "d" and isinstance(a, int) and not isinstance(a, bool):
            text = str(a)
        elif verb in "feg" and isinstance(a, (int, float)) and not isinstance(a, bool):
            if verb == "g" and prec is None:
                text = go_float(float(a))
            else:
                text = f"{float(a):.{int(prec) if prec is not None else 6}{verb}}"
                if verb == "e":
                    text = re.sub(r"e([-+])(\d)$", r"e\g<1>0\2", text)
        elif verb == "x" and isinstance(a, int):
            text = f"{a:x}"
        elif verb == "x" and isinstance(a, str):
            text = a.encode().hex()
        elif verb == "t" and isinstance(a, bool):
            text = "true" if a else "false"
        else:
            text = f"%!{verb}({type(a).__name__}={go_sprint(a)})"
        if width and width != "*":
            text = text.ljust(int(width)) if "-" in flags else text.rjust(int(width), "0" if "0" in flags else " ")
        out.append(text)
    out.append(fmt[pos:])
    if argi < len(args):
        out.append("%!(EXTRA " + ", ".join(f"{type(a).__name__}={go_sprint(a)}" for a in args[argi:]) + ")")
    return "".join(out)


# -- the tree -------------------------------------------------------------------------------


@dataclass
class _Operand:
    kind: str            # field, var, dot, literal, ident, pipe
    value: Any = None    # field chain / var name / literal / ident / nested pipeline
    chain: tuple[str, ...] = ()


@dataclass
class _Pipeline:
    decl: list[str] = field(default_factory=list)
    assign: bool = False   # `$x = ...` rather than `$x := ...`
    commands: list[list[_Operand]] = field(default_factory=list)


@dataclass
class _Node:
    kind: str            # text, action, if, range, with, break, continue, template (text: its name)
    line: int = 0
    text: str = ""
    pipe: _Pipeline | None = None
    body: list["_Node"] = field(default_factory=list)
    orelse: list["_Node"] = field(default_factory=list)


class _Break(Exception):
    pass


class _Continue(Exception):
    pass


def _unquote(kind: str, text: str) -> Any:
    if kind == "raw":
        return text[1:-1]
    if kind == "string":
        import ast

        try:
            return ast.literal_eval(text)
        except (ValueError, SyntaxError):
            raise TemplateError(f"bad string literal {text}") from None
    if kind == "char":
        import ast

        return ord(ast.literal_eval(text))
    raise AssertionError(kind)


def _number(text: str) -> Any:
    t = text.replace("_", "")
    try:
        if re.fullmatch(r"[-+]?0[xX][0-9a-fA-F]+", t):
            return int(t, 16)
        if re.fullmatch(r"[-+]?0[bB][01]+", t):
            return int(t, 2)
        if re.fullmatch(r"[-+]?0[oO][0-7]+", t):
            return int(t, 8)
        if re.fullmatch(r"[-+]?\d+", t):
            return int(t)
        return float(t)
    except ValueError:
        raise TemplateError(f"bad number syntax: {text!r}") from None


class _Parser:
    def __init__(self, text: str, delims: tuple[str, str]) -> None:
        self.delims = delims
        self.segments = scan(text, *delims)
        self.i = 0
        self.defines: dict[str, list[_Node]] = {}   # named templates: {{define}} and {{block}}

    def where(self, line: int, inner: str) -> str:
        return f"line {line}: {self.delims[0]}{inner.strip()}{self.delims[1]}"

    def parse(self) -> list[_Node]:
        nodes, end = self._list(top=True)
        return nodes

    def _list(self, top: bool = False) -> tuple[list[_Node], tuple[str, int, list]]:
        nodes: list[_Node] = []
        while self.i < len(self.segments):
            kind, line, value = self.segments[self.i]
            self.i += 1
            if kind == "text":
                nodes.append(_Node("text", line, text=value))
                continue
            toks = tokens(line, value)
            where = self.where(line, value)
            if not toks:
                raise TemplateError(f"{where}: missing value for command")
            head = toks[0]
            if head[0] == "ident" and head[1] in ("end", "else"):
                if top:
                    raise TemplateError(f"{where}: unexpected {head[1]}")
                return nodes, (head[1], line, toks[1:])
            if head[0] == "ident" and head[1] in ("if", "with", "range"):
                nodes.append(self._block(head[1], line, toks[1:], where))
            elif head[0] == "ident" and head[1] in ("break", "continue"):
                nodes.append(_Node(head[1], line))
            elif head[0] == "ident" and head[1] == "define":
                if not top:   # Go: definitions only at the top level
                    raise TemplateError(f"{where}: unexpected define in command")
                name, rest = self._template_name(toks[1:], "define", where)
                if rest:
                    raise TemplateError(f"{where}: unexpected {rest[0][1]!r} in define clause")
                self._define(name, self._body("define", where), where)
            elif head[0] == "ident" and head[1] == "template":
                name, rest = self._template_name(toks[1:], "template", where)
                nodes.append(_Node("template", line, text=name, pipe=self._pipeline(rest, where) if rest else None))
            elif head[0] == "ident" and head[1] == "block":
                # {{block "name" pipeline}}T{{end}}: {{define "name"}}T{{end}} plus {{template "name" pipeline}}
                name, rest = self._template_name(toks[1:], "block", where)
                if not rest:
                    raise TemplateError(f"{where}: missing value for block clause")
                pipe = self._pipeline(rest, where)
                self._define(name, self._body("block", where), where)
                nodes.append(_Node("template", line, text=name, pipe=pipe))
            else:
                nodes.append(_Node("action", line, pipe=self._pipeline(toks, where)))
        if not top:
            raise TemplateError("unexpected EOF: a block has no matching end")
        return nodes, ("eof", 0, [])

    @staticmethod
    def _template_name(toks: list, word: str, where: str) -> tuple[str, list]:
        if not toks or toks[0][0] not in ("string", "raw"):
            got = repr(toks[0][1]) if toks else "end of action"
            raise TemplateError(f"{where}: unexpected {got} in {word} clause: the name must be a quoted string")
        return _unquote(toks[0][0], toks[0][1]), toks[1:]

    def _body(self, word: str, where: str) -> list[_Node]:
        body, (end, eline, _) = self._list()
        if end != "end":
            raise TemplateError(f"{self.where(eline, end)}: unexpected {end} in {word}")
        return body

    def _define(self, name: str, body: list[_Node], where: str) -> None:
        """Go's rule: a second non-empty definition of a name is an error; an empty one is ignored."""
        def empty(nodes: list[_Node]) -> bool:
            return all(n.kind == "text" and not n.text.strip() for n in nodes)
        old = self.defines.get(name)
        if old is not None and not empty(old):
            if empty(body):
                return
            raise TemplateError(f'{where}: template: multiple definition of template "{name}"')
        self.defines[name] = body

    def _block(self, word: str, line: int, rest: list, where: str) -> _Node:
        node = _Node(word, line, pipe=self._pipeline(rest, where, allow_range_decl=word == "range"))
        node.body, (end, eline, etoks) = self._list()
        if end == "else":
            if etoks and etoks[0] == ("ident", "if") and word == "if" or etoks and etoks[0] == ("ident", "with") and word == "with":
                # `else if` / `else with`: a nested block sharing our end.
                nested = self._block(etoks[0][1], eline, etoks[1:], self.where(eline, "else"))
                node.orelse = [nested]
                return node
            if etoks:
                raise TemplateError(f"{self.where(eline, 'else')}: unexpected {etoks[0][1]!r} after else")
            node.orelse, (end2, _, rest2) = self._list()
            if end2 != "end":
                raise TemplateError(f"{self.where(eline, 'else')}: expected end, got {end2}")
        return node

    def _pipeline(self, toks: list, where: str, allow_range_decl: bool = False) -> _Pipeline:
        pipe = _Pipeline()
        decl_at = next((i for i, t in enumerate(toks) if t[0] in ("decl", "assign")), -1)
        if decl_at > 0:
            names = [v for k, v in toks[:decl_at] if k == "var"]
            if not names or len(names) > (2 if allow_range_decl else 1):
                raise TemplateError(f"{where}: too many declarations")
            pipe.decl = names
            pipe.assign = toks[decl_at][0] == "assign"
            toks = toks[decl_at + 1 :]
        if not toks:
            raise TemplateError(f"{where}: missing value for command")
        pos = 0
        command: list[_Operand] = []

        def operand(i: int) -> tuple[_Operand, int]:
            kind, text = toks[i]
            if kind == "lparen":
                depth, j = 1, i + 1
                while j < len(toks) and depth:
                    depth += {"lparen": 1, "rparen": -1}.get(toks[j][0], 0)
                    j += 1
                if depth:
                    raise TemplateError(f"{where}: unclosed left paren")
                op = _Operand("pipe", self._pipeline(toks[i + 1 : j - 1], where))
                if j < len(toks) and toks[j][0] == "field":
                    op.chain = tuple(toks[j][1].split(".")[1:])
                    j += 1
                return op, j
            if kind == "field":
                return _Operand("field", chain=tuple(text.split(".")[1:])), i + 1
            if kind == "dot":
                return _Operand("dot"), i + 1
            if kind == "var":
                name, *chain = text.split(".")
                return _Operand("var", name, tuple(chain)), i + 1
            if kind in ("string", "raw", "char"):
                return _Operand("literal", _unquote(kind, text)), i + 1
            if kind == "number":
                return _Operand("literal", _number(text)), i + 1
            if kind == "ident":
                if text in ("true", "false"):
                    return _Operand("literal", text == "true"), i + 1
                if text == "nil":
                    return _Operand("literal", None), i + 1
                name, *chain = text.split(".")
                if chain:
                    raise TemplateError(f"{where}: method calls are not supported ({text})")
                return _Operand("ident", name), i + 1
            raise TemplateError(f"{where}: unexpected {text!r}")

        while pos < len(toks):
            if toks[pos][0] == "pipe":
                if not command:
                    raise TemplateError(f'{where}: unexpected "|" (empty command)')
                pipe.commands.append(command)
                command = []
                pos += 1
                continue
            if toks[pos][0] == "rparen":
                raise TemplateError(f"{where}: unexpected right paren")
            op, pos = operand(pos)
            command.append(op)
        if not command:
            raise TemplateError(f"{where}: missing value for command")
        pipe.commands.append(command)
        return pipe


# -- execution ---------------------------------------------------------------------------


def _truth(v: Any) -> bool:
    if v is None:
        return False
    if isinstance(v, (bool, int, float, str, list, tuple, dict)):
        return bool(v)
    return True


def _basic(v: Any) -> Any:
    if isinstance(v, bool) or v is None or isinstance(v, (int, float, str)):
        return v
    raise TemplateError(f"incompatible type for comparison: {type(v).__name__}")


def _eq(a: Any, *bs: Any) -> bool:
    if not bs:
        raise TemplateError("missing argument for comparison")
    a = _basic(a)
    for b in bs:
        b = _basic(b)
        if isinstance(a, str) != isinstance(b, str) or isinstance(a, bool) != isinstance(b, bool):
            raise TemplateError("incompatible types for comparison")
        if a == b:
            return True
    return False


def _ordered(a: Any, b: Any) -> tuple[Any, Any]:
    a, b = _basic(a), _basic(b)
    if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None:
        raise TemplateError("invalid type for comparison")
    if isinstance(a, str) != isinstance(b, str):
        raise TemplateError("incompatible types for comparison")
    return a, b


def _index(item: Any, *keys: Any) -> Any:
    for k in keys:
        if isinstance(item, Mapping):
            item = _map_get(item, k)
        elif isinstance(item, (list, tuple, str)):
            if not isinstance(k, int) or not 0 <= k < len(item):
                raise TemplateError(f"error calling index: index out of range: {k}")
            item = item[k]
        elif item is None:
            raise TemplateError("error calling index: index of untyped nil")
        else:
            raise TemplateError(f"error calling index: can't index item of type {type(item).__name__}")
    return item


def _slice(item: Any, *idx: int) -> Any:
    if len(idx) > 2:
        idx = idx[:2]
    lo = idx[0] if idx else 0
    hi = idx[1] if len(idx) > 1 else len(item)
    if not 0 <= lo <= hi <= len(item):
        raise TemplateError(f"error calling slice: index out of range: {lo}:{hi}")
    return item[lo:hi]


def _go_print(*args: Any) -> str:
    # fmt.Sprint: a space between operands when neither is a string.
    out = []
    for i, a in enumerate(args):
        if i and not isinstance(a, str) and not isinstance(args[i - 1], str):
            out.append(" ")
        out.append(go_sprint(a))
    return "".join(out)


def _js(*args: Any) -> str:
    s = _go_print(*args)
    table = {"\\": "\\\\", "'": "\\'", '"': "\\\"", "<": "\\u003C", ">": "\\u003E", "&": "\\u0026",
             "=": "\\u003D", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
    return "".join(table.get(c, c) for c in s)


def _and(*args: Any) -> Any:
    for a in args:
        if not _truth(a):
            return a
    return args[-1]


def _or(*args: Any) -> Any:
    for a in args:
        if _truth(a):
            return a
    return args[-1]


def _len(v: Any) -> int:
    try:
        return len(v)
    except TypeError:
        raise TemplateError(f"error calling len: len of type {type(v).__name__}") from None


BUILTINS: dict[str, Callable[..., Any]] = {
    "and": _and, "or": _or, "not": lambda a: not _truth(a), "len": _len, "index": _index,
    "slice": _slice, "print": _go_print, "printf": lambda f, *a: go_sprintf(f, *a),
    "println": lambda *a: " ".join(go_sprint(x) for x in a) + "\n",
    "eq": _eq, "ne": lambda a, b: not _eq(a, b),
    "lt": lambda a, b: (lambda x, y: x < y)(*_ordered(a, b)),
    "le": lambda a, b: (lambda x, y: x <= y)(*_ordered(a, b)),
    "gt": lambda a, b: (lambda x, y: x > y)(*_ordered(a, b)),
    "ge": lambda a, b: (lambda x, y: x >= y)(*_ordered(a, b)),
    "html": lambda *a: _html.escape(_go_print(*a)).replace("&#x27;", "&#39;"),
    "js": _js, "urlquery": lambda *a: quote_plus(_go_print(*a)),
}
_LAZY = {"and", "or"}


class Template:
    """A parsed template; `execute(data)` returns the text."""

    def __init__(self, text: str, *, name: str = "template", delims: tuple[str, str] = ("{{", "}}"),
                 functions: Mapping[str, Callable[..., Any]] | None = None) -> None:
        self.name = name
        self.text = text
        self.functions = {**BUILTINS, **(functions or {})}
        try:
            parser = _Parser(text, delims)
            self.nodes = parser.parse()
        except TemplateError as exc:
            raise TemplateError(f"template {name}: {exc}") from None
        self.defines = parser.defines
        self.defines.setdefault(name, self.nodes)   # Go: the template itself is invocable by its name
        self._check_functions(self.nodes)
        for body in parser.defines.values():
            self._check_functions(body)

    def _check_functions(self, nodes: list[_Node]) -> None:
        for n in nodes:
            if n.pipe:
                self._check_pipe(n.pipe, n.line)
            self._check_functions(n.body)
            self._check_functions(n.orelse)

    def _check_pipe(self, pipe: _Pipeline, line: int) -> None:
        for cmd in pipe.commands:
            for op in cmd:
                if op.kind == "ident" and op.value not in self.functions:
                    raise TemplateError(f"template {self.name}: line {line}: function {op.value!r} not defined")
                if op.kind == "pipe":
                    self._check_pipe(op.value, line)

    def execute(self, data: Any) -> str:
        out: list[str] = []
        scopes: list[dict[str, Any]] = [{"$": data}]
        try:
            self._run(self.nodes, data, scopes, out)
        except TemplateError as exc:
            raise TemplateError(f"template {self.name}: {exc}") from None
        except RecursionError:   # a template invoking itself without end (Go stops at a depth of 100000)
            raise TemplateError(f"template {self.name}: exceeded maximum template depth") from None
        return "".join(out)

    # -- internals --

    def _run(self, nodes: list[_Node], dot: Any, scopes: list[dict[str, Any]], out: list[str]) -> None:
        for n in nodes:
            if n.kind == "text":
                out.append(n.text)
            elif n.kind == "action":
                v = self._pipe(n.pipe, dot, scopes, n.line)
                if not n.pipe.decl:
                    out.append(_print_value(v))
            elif n.kind == "if":
                scopes.append({})
                try:
                    v = self._pipe(n.pipe, dot, scopes, n.line)
                    self._run(n.body if _truth(v) else n.orelse, dot, scopes, out)
                finally:
                    scopes.pop()
            elif n.kind == "with":
                scopes.append({})
                try:
                    v = self._pipe(n.pipe, dot, scopes, n.line)
                    if _truth(v):
                        self._run(n.body, v, scopes, out)
                    else:
                        self._run(n.orelse, dot, scopes, out)
                finally:
                    scopes.pop()
            elif n.kind == "range":
                self._range(n, dot, scopes, out)
            elif n.kind == "template":
                body = self.defines.get(n.text)
                if body is None:
                    raise TemplateError(f'line {n.line}: template "{n.text}" not defined')
                # dot is the pipeline's value (nil without one); variables start afresh with $ = dot
                value = self._pipe(n.pipe, dot, scopes, n.line) if n.pipe is not None else None
                self._run(body, value, [{"$": value}], out)
            elif n.kind == "break":
                raise _Break()
            elif n.kind == "continue":
                raise _Continue()

    def _range(self, n: _Node, dot: Any, scopes: list[dict[str, Any]], out: list[str]) -> None:
        assert n.pipe is not None
        decl = n.pipe.decl
        n.pipe.decl = []
        try:
            v = self._pipe(n.pipe, dot, scopes, n.line)
        finally:
            n.pipe.decl = decl
        if v is None:
            items: list[tuple[Any, Any]] = []
        elif isinstance(v, Mapping):
            items = [(k, v[k]) for k in sorted(v)]
        elif isinstance(v, (list, tuple)):
            items = list(enumerate(v))
        elif isinstance(v, int) and not isinstance(v, bool):
            items = [(i, i) for i in range(v)]
        else:
            raise TemplateError(f"line {n.line}: range can't iterate over {go_sprint(v)}")
        if not items:
            self._run(n.orelse, dot, scopes, out)
            return
        for key, elem in items:
            scope: dict[str, Any] = {}
            if len(decl) == 1:
                scope[decl[0]] = elem
            elif len(decl) == 2:
                scope[decl[0]], scope[decl[1]] = key, elem
            scopes.append(scope)
            try:
                self._run(n.body, elem, scopes, out)
            except _Break:
                break
            except _Continue:
                continue
            finally:
                scopes.pop()

    def _lookup(self, name: str, scopes: list[dict[str, Any]], line: int) -> Any:
        for s in reversed(scopes):
            if name in s:
                return s[name]
        raise TemplateError(f"line {line}: undefined variable: {name}")

    def _pipe(self, pipe: _Pipeline, dot: Any, scopes: list[dict[str, Any]], line: int) -> Any:
        value: Any = _NOTHING
        for cmd in pipe.commands:
            value = self._command(cmd, dot, scopes, line, value)
        if pipe.decl:
            name = pipe.decl[-1]
            if pipe.assign:
                for s in reversed(scopes):
                    if name in s:
                        s[name] = value
                        break
                else:
                    raise TemplateError(f"line {line}: undefined variable: {name}")
            else:
                scopes[-1][name] = value
        return value

    def _command(self, cmd: list[_Operand], dot: Any, scopes: list[dict[str, Any]], line: int,
                 piped: Any) -> Any:
        head = cmd[0]
        if head.kind == "ident":
            fn = self.functions[head.value]
            if head.value in _LAZY:
                args_ops = cmd[1:]
                vals = []
                for op in args_ops:
                    v = self._operand(op, dot, scopes, line)
                    vals.append(v)
                    if (head.value == "and") != _truth(v):
                        return v
                if piped is not _NOTHING:
                    vals.append(piped)
                if not vals:
                    raise TemplateError(f"line {line}: wrong number of args for {head.value}")
                return fn(*vals)
            args = [self._operand(op, dot, scopes, line) for op in cmd[1:]]
            if piped is not _NOTHING:
                args.append(piped)
            try:
                return fn(*args)
            except TemplateError as exc:
                raise TemplateError(f"line {line}: error calling {head.value}: {exc}") from None
            except TypeError:
                raise TemplateError(f"line {line}: wrong number of args for {head.value}: got {len(args)}") from None
        if len(cmd) > 1 or piped is not _NOTHING:
            raise TemplateError(f"line {line}: can't give argument to non-function {_describe(head)}")
        return self._operand(head, dot, scopes, line)

    def _operand(self, op: _Operand, dot: Any, scopes: list[dict[str, Any]], line: int) -> Any:
        if op.kind == "literal":
            return op.value
        if op.kind == "dot":
            return dot
        if op.kind == "field":
            return self._chain(dot, op.chain, line)
        if op.kind == "var":
            return self._chain(self._lookup(op.value, scopes, line), op.chain, line)
        if op.kind == "pipe":
            return self._chain(self._pipe(op.value, dot, scopes, line), op.chain, line)
        if op.kind == "ident":
            return self._command([op], dot, scopes, line, _NOTHING)
        raise AssertionError(op.kind)

    def _chain(self, value: Any, chain: tuple[str, ...], line: int) -> Any:
        for name in chain:
            if isinstance(value, Struct):
                if name not in value:
                    raise TemplateError(f"line {line}: can't evaluate field {name} in type {value.type_name}")
                value = value[name]
            elif isinstance(value, Mapping):
                value = _map_get(value, name)
            elif value is None:
                raise TemplateError(f"line {line}: nil pointer evaluating .{name}")
            elif hasattr(value, "__dataclass_fields__") and name in value.__dataclass_fields__:
                value = getattr(value, name)
            else:
                raise TemplateError(f"line {line}: can't evaluate field {name} in type {type(value).__name__}")
        return value


_NOTHING = object()


def _describe(op: _Operand) -> str:
    if op.kind == "field":
        return "." + ".".join(op.chain)
    if op.kind == "var":
        return op.value + "".join("." + c for c in op.chain)
    if op.kind == "literal":
        return go_sprint(op.value)
    return op.kind


def render(text: str, data: Any, *, delims: tuple[str, str] = ("{{", "}}"), name: str = "template") -> str:
    """Parse and execute in one go."""
    return Template(text, delims=delims, name=name).execute(data)
