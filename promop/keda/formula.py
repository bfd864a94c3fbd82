"""scalingModifiers' formula (§2.8): a subset of expr-lang (github.com/expr-lang/expr), our own parser.

Why our own: KEDA evaluates `advanced.scalingModifiers.formula` with expr-lang; Python's eval() would
be unsafe and means something else. The subset covers what KEDA's docs and users write: numbers,
trigger names, `nil`/`true`/`false`, + - * / % and ** (also ^), unary - + ! (and `not`),
comparisons, && || (and/or), `in`, the ternary `?:`, `??`, parentheses, array literals, and the
builtins count/all/any/none/one/filter/map/sum/mean/max/min/abs/float/int/ceil/floor/round/len with
closures over `#` (`count([a, b], {# > 1})`).

expr-lang's precedence, kept here: `??` binds tightest of the binary operators (500), then `**`/`^`
(100, right-associative), unary `-`/`+` (90), `*` `/` `%` (60), unary `!`/`not` (50), `+` `-` (30),
comparisons and `in` (20), `&&`/`and` (15), `||`/`or` (10), and the ternary lowest. `/` always gives a
float; `%` needs integers.

    compile_formula(text, known_names=None) -> Formula      FormulaError: syntax error, unknown name/function
    Formula.names                                           the variables (trigger names) it reads
    Formula.evaluate(values) -> float | None                values: name -> float, or None (nil) for a failing trigger
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<num>0[xX][0-9a-fA-F_]+|(?:\d[\d_]*)?\.?\d[\d_]*(?:[eE][+-]?\d+)?)
  | (?P<name>[A-Za-z_$][A-Za-z0-9_$]*)
  | (?P<str>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
  | (?P<op>\?\?|\*\*|==|!=|<=|>=|&&|\|\||[-+*/%^<>!?:()\[\]{},\#])
""", re.VERBOSE)

BINARY = {"??": 500, "**": 100, "^": 100, "*": 60, "/": 60, "%": 60, "+": 30, "-": 30,
          "==": 20, "!=": 20, "<": 20, ">": 20, "<=": 20, ">=": 20, "in": 20,
          "&&": 15, "and": 15, "||": 10, "or": 10}
RIGHT_ASSOC = {"**", "^"}
UNARY = {"-": 90, "+": 90, "!": 50, "not": 50}
PREDICATES = {"count", "all", "any", "none", "one", "filter", "map"}
FUNCTIONS = PREDICATES | {"sum", "mean", "max", "min", "abs", "float", "int", "ceil", "floor", "round", "len"}
KEYWORDS = {"nil", "true", "false", "and", "or", "not", "in"}


class FormulaError(ValueError):
    """The formula does not compile or cannot be evaluated; the message says where."""


@dataclass(slots=True)
class _Tok:
    kind: str      # num, name, str, op, end
    text: str
    pos: int


def _position(text: str, pos: int) -> str:
    line = text.count("\n", 0, pos) + 1
    col = pos - (text.rfind("\n", 0, pos) + 1) + 1
    return f"({line}:{col})"


def _tokens(text: str) -> list[_Tok]:
    out, pos = [], 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise FormulaError(f"unexpected token {text[pos]!r} {_position(text, pos)}")
        if m.lastgroup != "ws":
            out.append(_Tok(m.lastgroup, m.group(0), pos))
        pos = m.end()
    out.append(_Tok("end", "", len(text)))
    return out


class _Parser:
    """A Pratt parser producing tuples: ("num", v) ("var", name) ("const", v) ("un", op, x)
    ("bin", op, a, b) ("cond", c, a, b) ("arr", items) ("call", fn, args) ("closure", body) ("elem",)."""

    def __init__(self, text: str):
        self.text, self.toks, self.i = text, _tokens(text), 0
        self.names: dict[str, int] = {}
        self.closure_depth = 0

    def peek(self) -> _Tok:
        return self.toks[self.i]

    def next(self) -> _Tok:
        tok = self.toks[self.i]
        self.i += 1
        return tok

    def fail(self, tok: _Tok, what: str) -> FormulaError:
        shown = f"token {tok.text!r}" if tok.kind != "end" else "end of expression"
        return FormulaError(f"{what}: unexpected {shown} {_position(self.text, tok.pos)}")

    def expect(self, text: str) -> None:
        tok = self.next()
        if tok.text != text or tok.kind not in ("op", "name"):
            raise self.fail(tok, f"expected {text!r}")

    def parse(self):
        node = self.expression()
        if self.peek().kind != "end":
            raise self.fail(self.peek(), "syntax error")
        return node

    def expression(self, min_prec: int = 0):
        node = self.binary(min_prec)
        if min_prec == 0 and self.peek().text == "?" and self.peek().kind == "op":
            self.next()
            yes = self.expression()
            self.expect(":")
            no = self.expression()
            return ("cond", node, yes, no)
        return node

    def binary(self, min_prec: int):
        left = self.unary()
        while True:
            tok = self.peek()
            op = tok.text if tok.kind in ("op", "name") else None
            prec = BINARY.get(op) if op else None
            if prec is None or prec < min_prec or (tok.kind == "name" and op not in ("and", "or", "in")):
                return left
            self.next()
            right = self.binary(prec if op in RIGHT_ASSOC else prec + 1)
            left = ("bin", op, left, right)

    def unary(self):
        tok = self.peek()
        if (tok.kind == "op" and tok.text in ("-", "+", "!")) or (tok.kind == "name" and tok.text == "not"):
            self.next()
            return ("un", tok.text, self.binary(UNARY[tok.text]))
        return self.primary()

    def primary(self):
        tok = self.next()
        if tok.kind == "num":
            return ("num", _number(tok.text))
        if tok.kind == "str":
            return ("const", bytes(tok.text[1:-1], "utf-8").decode("unicode_escape"))
        if tok.kind == "op" and tok.text == "(":
            node = self.expression()
            self.expect(")")
            return node
        if tok.kind == "op" and tok.text == "[":
            return ("arr", self.items("]"))
        if tok.kind == "op" and tok.text == "#":
            if not self.closure_depth:
                raise FormulaError(f"cannot use pointer accessor outside predicate {_position(self.text, tok.pos)}")
            return ("elem",)
        if tok.kind == "op" and tok.text == "{":
            return self.closure_body(tok)
        if tok.kind == "name":
            return self.name(tok)
        raise self.fail(tok, "syntax error")

    def closure_body(self, tok: _Tok):
        self.closure_depth += 1
        body = self.expression()
        self.closure_depth -= 1
        self.expect("}")
        return ("closure", body)

    def items(self, close: str) -> list:
        out = []
        while not (self.peek().kind == "op" and self.peek().text == close):
            out.append(self.expression())
            if self.peek().kind == "op" and self.peek().text == ",":
                self.next()
            elif not (self.peek().kind == "op" and self.peek().text == close):
                raise self.fail(self.peek(), f"expected ',' or {close!r}")
        self.next()
        return out

    def name(self, tok: _Tok):
        word = tok.text
        if word in ("nil", "true", "false"):
            return ("const", {"nil": None, "true": True, "false": False}[word])
        if word in KEYWORDS:
            raise self.fail(tok, "syntax error")
        if self.peek().kind == "op" and self.peek().text == "(":
            if word not in FUNCTIONS:
                raise FormulaError(f"unknown func {word} {_position(self.text, tok.pos)}")
            self.next()
            return self.call(word)
        self.names.setdefault(word, tok.pos)
        return ("var", word)

    def call(self, fn: str):
        args = []
        if fn in PREDICATES:
            args.append(self.expression())
            self.expect(",")
            self.closure_depth += 1
            body = self.expression()
            self.closure_depth -= 1
            args.append(body if body[0] == "closure" else ("closure", body))
            if self.peek().kind == "op" and self.peek().text == ",":
                self.next()
            self.expect(")")
            return ("call", fn, args)
        return ("call", fn, self.items(")"))


def _number(text: str):
    clean = text.replace("_", "")
    if clean[:2].lower() == "0x":
        return int(clean, 16)
    if re.fullmatch(r"\d+", clean):
        return int(clean)
    return float(clean)


@dataclass(slots=True)
class Formula:
    text: str
    names: frozenset[str]
    ast: tuple
    passes_nil: bool = False       # contains `??`: KEDA lets a nil result through instead of float(nil)

    def evaluate(self, values: dict[str, float | None]) -> float | None:
        """The formula's value wrapped in float(...) as KEDA wraps it; None when a `??` formula yields nil.
        Raises FormulaError for an unknown name or a type error (e.g. nil + 1 for a failing trigger)."""
        missing = sorted(self.names - set(values))
        if missing:
            raise FormulaError(f"unknown name {missing[0]}")
        result = _Eval(values).run(self.ast, None)
        if result is None and self.passes_nil:
            return None
        return _to_float(result)


def compile_formula(text: str, known_names: set[str] | frozenset[str] | None = None) -> Formula:
    """Parse `text`. With `known_names` (the ScaledObject's named, non-cpu/memory triggers, as KEDA's
    environment), a name outside them is "unknown name <n> (line:col)", as expr-lang reports it."""
    if not isinstance(text, str) or not text.strip():
        raise FormulaError("formula is empty")
    parser = _Parser(text)
    ast = parser.parse()
    if known_names is not None:
        for name, pos in parser.names.items():
            if name not in known_names:
                raise FormulaError(f"unknown name {name} {_position(text, pos)}")
    return Formula(text=text, names=frozenset(parser.names), ast=ast, passes_nil="??" in text)


def _type(v) -> str:
    if v is None:
        return "<nil>"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int"
    if isinstance(v, float):
        return "float64"
    if isinstance(v, list):
        return "[]interface {}"
    return "string"


def _is_num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _to_float(v) -> float:
    if _is_num(v):
        return float(v)
    if isinstance(v, str):
        try:
            return float(v)
        except ValueError:
            pass
    raise FormulaError(f"invalid operation: float({_type(v)})")


class _Eval:
    def __init__(self, values: dict):
        self.values = values

    def run(self, node, elem):
        kind = node[0]
        if kind == "num" or kind == "const":
            return node[1]
        if kind == "var":
            return self.values[node[1]]
        if kind == "elem":
            return elem
        if kind == "arr":
            return [self.run(x, elem) for x in node[1]]
        if kind == "un":
            return self.unary(node[1], self.run(node[2], elem))
        if kind == "cond":
            test = self.run(node[1], elem)
            if not isinstance(test, bool):
                raise FormulaError(f"non-bool expression (type {_type(test)}) used as condition")
            return self.run(node[2] if test else node[3], elem)
        if kind == "bin":
            return self.binary(node[1], node[2], node[3], elem)
        if kind == "call":
            return self.call(node[1], node[2], elem)
        if kind == "closure":
            return self.run(node[1], elem)
        raise FormulaError(f"cannot evaluate {kind}")

    def unary(self, op: str, v):
        if op in ("!", "not"):
            if not isinstance(v, bool):
                raise FormulaError(f"invalid operation: {op} ({_type(v)})")
            return not v
        if not _is_num(v):
            raise FormulaError(f"invalid operation: {op} ({_type(v)})")
        return -v if op == "-" else v

    def binary(self, op: str, left_node, right_node, elem):
        left = self.run(left_node, elem)
        if op == "??":
            return left if left is not None else self.run(right_node, elem)
        if op in ("&&", "and", "||", "or"):
            if not isinstance(left, bool):
                raise FormulaError(f"invalid operation: {op} ({_type(left)})")
            if (op in ("&&", "and")) != left:
                return left
            right = self.run(right_node, elem)
            if not isinstance(right, bool):
                raise FormulaError(f"invalid operation: {op} ({_type(right)})")
            return right
        right = self.run(right_node, elem)
        if op == "==":
            return _equal(left, right)
        if op == "!=":
            return not _equal(left, right)
        if op == "in":
            if not isinstance(right, list):
                raise FormulaError(f"invalid operation: in ({_type(right)})")
            return any(_equal(left, x) for x in right)
        return _arith(op, left, right)

    def call(self, fn: str, args: list, elem):
        if fn in PREDICATES:
            items = self.run(args[0], elem)
            if not isinstance(items, list):
                raise FormulaError(f"invalid argument for {fn} (type {_type(items)})")
            results = [self.run(args[1], x) for x in items]
            if fn == "map":
                return results
            if fn == "filter":
                return [x for x, keep in zip(items, results) if _truth(keep, fn)]
            hits = sum(1 for r in results if _truth(r, fn))
            return {"count": hits, "all": hits == len(items), "any": hits > 0, "none": hits == 0,
                    "one": hits == 1}[fn]
        values = [self.run(a, elem) for a in args]
        return _builtin(fn, values)


def _truth(v, fn: str) -> bool:
    if not isinstance(v, bool):
        raise FormulaError(f"predicate of {fn} must return a bool, got {_type(v)}")
    return v


def _equal(a, b) -> bool:
    if _is_num(a) and _is_num(b):
        return a == b
    return type(a) is type(b) and a == b


def _arith(op: str, a, b):
    if op in ("+",) and isinstance(a, str) and isinstance(b, str):
        return a + b
    if not (_is_num(a) and _is_num(b)):
        raise FormulaError(f"invalid operation: {_type(a)} {op} {_type(b)}")
    if op in ("<", ">", "<=", ">="):
        return {"<": a < b, ">": a > b, "<=": a <= b, ">=": a >= b}[op]
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op == "/":
        return _divide(float(a), float(b))
    if op == "%":
        if not (isinstance(a, int) and isinstance(b, int)):
            raise FormulaError(f"invalid operation: {_type(a)} % {_type(b)} (% needs integers)")
        if b == 0:
            raise FormulaError("integer divide by zero")
        return int(math.fmod(a, b))
    if op in ("**", "^"):
        try:
            return math.pow(float(a), float(b))
        except (OverflowError, ValueError):
            return math.inf if a > 0 else math.nan
    raise FormulaError(f"unknown operator {op}")


def _divide(a: float, b: float) -> float:
    """Go's float division: x/0 is ±Inf (NaN for 0/0), never an exception."""
    if b == 0:
        if a == 0 or math.isnan(a):
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1, b)
    return a / b


def _numbers(fn: str, values: list) -> list:
    flat = values[0] if len(values) == 1 and isinstance(values[0], list) else values
    if not flat and fn in ("max", "min"):
        raise FormulaError(f"not enough arguments to call {fn}")
    for v in flat:
        if not _is_num(v):
            raise FormulaError(f"invalid argument for {fn} (type {_type(v)})")
    return flat


def _builtin(fn: str, values: list):
    if fn in ("max", "min", "sum", "mean"):
        nums = _numbers(fn, values)
        if fn == "max":
            return max(nums)
        if fn == "min":
            return min(nums)
        if fn == "sum":
            return sum(nums)
        return float(sum(nums)) / len(nums) if nums else 0.0
    if len(values) != 1:
        raise FormulaError(f"{fn} takes exactly one argument, got {len(values)}")
    v = values[0]
    if fn == "len":
        if not isinstance(v, (list, str)):
            raise FormulaError(f"invalid argument for len (type {_type(v)})")
        return len(v)
    if fn == "float":
        return _to_float(v)
    if not _is_num(v):
        raise FormulaError(f"invalid argument for {fn} (type {_type(v)})")
    if fn == "abs":
        return abs(v)
    if fn == "int":
        if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
            raise FormulaError(f"cannot convert {v} to int")
        return int(v)
    if fn == "ceil":
        return float(math.ceil(v))
    if fn == "floor":
        return float(math.floor(v))
    return float(math.floor(abs(v) + 0.5) * (1 if v >= 0 else -1))   # Go's math.Round: half away from zero
