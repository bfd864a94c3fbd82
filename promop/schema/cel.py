"""The simple part of CEL that `x-kubernetes-validations` rules in our CRDs use.

Supported: `self` and field selection (`self.a.b`), `has(self.a.b)`, `.size()` on strings,
lists and maps, string/int/bool/null literals, `!`, unary `-`, `&&`, `||`, `== != < <= > >=`,
`+ -` on ints, `cond ? a : b`, parentheses. That covers every rule in upstream's
monitoring.coreos.com CRDs (0.93.0).

Anything else (macros such as `all()`/`exists()`, `oldSelf` transition rules, string
functions, `in`, ...) raises `Unsupported` at parse time: the caller skips that rule and
says so, rather than guess. A rule that fails at evaluation time (a missing field read
without `has()`) is an error in Kubernetes too; we report it the same way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable


class Unsupported(Exception):
    """The rule uses CEL beyond the subset above."""


class EvalError(Exception):
    """The rule could not be evaluated (e.g. no such key)."""


_TOKEN = re.compile(
    r"""\s*(?:
      (?P<num>\d+)
    | (?P<str>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")
    | (?P<id>[A-Za-z_][A-Za-z0-9_]*)
    | (?P<op>&&|\|\||==|!=|<=|>=|[!<>()?:.+\-])
    )""",
    re.VERBOSE,
)

_MISSING = object()


@dataclass
class _Tok:
    kind: str
    text: str


def _tokenize(src: str) -> list[_Tok]:
    toks, i = [], 0
    while i < len(src):
        if src[i:].strip() == "":
            break
        m = _TOKEN.match(src, i)
        if not m or m.end() == i:
            raise Unsupported(f"unsupported syntax at {src[i:i + 10]!r}")
        kind = m.lastgroup or ""
        toks.append(_Tok(kind, m.group(kind)))
        i = m.end()
    toks.append(_Tok("end", ""))
    return toks


Node = Callable[[Any], Any]


class _Parser:
    def __init__(self, src: str):
        self.toks = _tokenize(src)
        self.i = 0

    def peek(self) -> _Tok:
        return self.toks[self.i]

    def take(self, text: str | None = None) -> _Tok:
        tok = self.toks[self.i]
        if text is not None and tok.text != text:
            raise Unsupported(f"expected {text!r}, found {tok.text!r}")
        self.i += 1
        return tok

    def parse(self) -> Node:
        node = self.ternary()
        if self.peek().kind != "end":
            raise Unsupported(f"unexpected {self.peek().text!r}")
        return node

    def ternary(self) -> Node:
        cond = self.or_()
        if self.peek().text == "?":
            self.take("?")
            a = self.ternary()
            self.take(":")
            b = self.ternary()
            return lambda s: a(s) if _bool(cond(s)) else b(s)
        return cond

    def or_(self) -> Node:
        node = self.and_()
        while self.peek().text == "||":
            self.take()
            left, right = node, self.and_()
            node = _or(left, right)
        return node

    def and_(self) -> Node:
        node = self.rel()
        while self.peek().text == "&&":
            self.take()
            left, right = node, self.rel()
            node = _and(left, right)
        return node

    def rel(self) -> Node:
        left = self.add()
        op = self.peek().text
        if op in ("==", "!=", "<", "<=", ">", ">="):
            self.take()
            right = self.add()
            return _compare(op, left, right)
        return left

    def add(self) -> Node:
        node = self.unary()
        while self.peek().text in ("+", "-"):
            op = self.take().text
            left, right = node, self.unary()
            node = _arith(op, left, right)
        return node

    def unary(self) -> Node:
        if self.peek().text == "!":
            self.take()
            inner = self.unary()
            return lambda s: not _bool(inner(s))
        if self.peek().text == "-":
            self.take()
            inner = self.unary()
            return lambda s: -_int(inner(s))
        return self.postfix()

    def postfix(self) -> Node:
        node = self.primary()
        while self.peek().text == ".":
            self.take()
            name = self.take().text
            if self.peek().text == "(":
                self.take("(")
                self.take(")")
                if name != "size":
                    raise Unsupported(f"function {name}() is not supported")
                node = _size(node)
            else:
                node = _select(node, name)
        return node

    def primary(self) -> Node:
        tok = self.take()
        if tok.kind == "num":
            value = int(tok.text)
            return lambda s: value
        if tok.kind == "str":
            value = _unquote(tok.text)
            return lambda s: value
        if tok.text == "(":
            node = self.ternary()
            self.take(")")
            return node
        if tok.kind == "id":
            if tok.text == "self":
                return lambda s: s
            if tok.text in ("true", "false"):
                value = tok.text == "true"
                return lambda s: value
            if tok.text == "null":
                return lambda s: None
            if tok.text == "has":
                self.take("(")
                path = self._selector_path()
                self.take(")")
                return _has(path)
            raise Unsupported(f"identifier {tok.text!r} is not supported")
        raise Unsupported(f"unexpected {tok.text!r}")

    def _selector_path(self) -> list[str]:
        if self.take().text != "self":
            raise Unsupported("has() only on self.<field>")
        path = []
        while self.peek().text == ".":
            self.take()
            path.append(self.take().text)
        if not path:
            raise Unsupported("has() needs a field")
        return path


def _unquote(text: str) -> str:
    body = text[1:-1]
    if "\\" in body:
        raise Unsupported("escapes in string literals are not supported")
    return body


def _bool(v: Any) -> bool:
    if not isinstance(v, bool):
        raise EvalError(f"expected a bool, got {type(v).__name__}")
    return v


def _int(v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise EvalError(f"expected an int, got {type(v).__name__}")
    return v


def _or(a: Node, b: Node) -> Node:
    def f(s: Any) -> bool:
        # CEL's || is commutative over errors: true wins even if the other side errs.
        try:
            if _bool(a(s)):
                return True
        except EvalError:
            if _bool(b(s)):
                return True
            raise
        return _bool(b(s))
    return f


def _and(a: Node, b: Node) -> Node:
    def f(s: Any) -> bool:
        try:
            if not _bool(a(s)):
                return False
        except EvalError:
            if not _bool(b(s)):
                return False
            raise
        return _bool(b(s))
    return f


def _compare(op: str, a: Node, b: Node) -> Node:
    def f(s: Any) -> bool:
        x, y = a(s), b(s)
        if op == "==":
            return x == y and type(x) is type(y)
        if op == "!=":
            return not (x == y and type(x) is type(y))
        if type(x) is not type(y) or isinstance(x, (dict, list, bool)) or x is None:
            raise EvalError(f"no such overload: {type(x).__name__} {op} {type(y).__name__}")
        return {"<": x < y, "<=": x <= y, ">": x > y, ">=": x >= y}[op]
    return f


def _arith(op: str, a: Node, b: Node) -> Node:
    return (lambda s: _int(a(s)) + _int(b(s))) if op == "+" else (lambda s: _int(a(s)) - _int(b(s)))


def _size(a: Node) -> Node:
    def f(s: Any) -> int:
        v = a(s)
        if not isinstance(v, (str, list, dict)):
            raise EvalError("size() of a non-collection")
        return len(v)
    return f


def _select(a: Node, name: str) -> Node:
    def f(s: Any) -> Any:
        v = a(s)
        if not isinstance(v, dict) or name not in v:
            raise EvalError(f"no such key: {name}")
        return v[name]
    return f


def _has(path: list[str]) -> Node:
    def f(s: Any) -> bool:
        v = s
        for name in path[:-1]:
            if not isinstance(v, dict) or name not in v:
                raise EvalError(f"no such key: {name}")
            v = v[name]
        if not isinstance(v, dict):
            raise EvalError("has() on a non-object")
        return path[-1] in v
    return f


@lru_cache(maxsize=256)
def compile_rule(rule: str) -> Callable[[Any], bool]:
    """A checker for `rule`: returns the rule's bool, raises EvalError or (at compile) Unsupported."""
    if "oldSelf" in rule:
        raise Unsupported("transition rules (oldSelf) are not supported")
    node = _Parser(rule).parse()
    return lambda s: _bool(node(s))


def compile_error(expression: str) -> str | None:
    """None if `expression` compiles, else the compiler's message. This subset cannot tell a
    rule beyond it from a wrong one, so what it does not support counts as compiling."""
    try:
        compile_rule(expression)
    except Unsupported:
        return None
    except Exception as exc:  # the subset parser's own errors on malformed input
        return str(exc) or type(exc).__name__
    return None
