"""Kubernetes label selectors, both forms, with apimachinery's semantics.

- The structured form, metav1.LabelSelector (`matchLabels`/`matchExpressions`
  with In, NotIn, Exists, DoesNotExist), turned into requirements as
  `metav1.LabelSelectorAsSelector` does: a nil selector (None) selects nothing,
  `{}` selects everything. This distinction is the source of much user
  confusion, so `explain` says exactly which requirement failed.
- The string form (`app=web,tier in (a,b),!canary,replicas>1`), parsed as
  apimachinery's `labels.Parse` (pkg/labels/selector.go): its lexer, grammar,
  key/value validation and error messages. `gt`/`lt` (`>`/`<`) exist only
  here, as in Kubernetes; LabelSelector structs have no such operator.

One module for every user (renderer, operator, adapter, autoscaler, sandbox):
a primitive that imports nothing of promop.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any, Mapping

# metav1.LabelSelectorOperator -> selection.Operator, as LabelSelectorAsSelector maps them.
STRUCT_OPERATORS = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}
OPERATORS = tuple(STRUCT_OPERATORS)
_STRUCT_NAMES = {v: k for k, v in STRUCT_OPERATORS.items()}
BINARY_OPERATORS = ("in", "notin", "=", "==", "!=", "gt", "lt")

_QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QUALIFIED_NAME_MSG = ("must consist of alphanumeric characters, '-', '_' or '.', "
                       "and must start and end with an alphanumeric character")
_LABEL_VALUE_FMT = f"({_QUALIFIED_NAME_FMT})?"
_LABEL_VALUE_MSG = ("a valid label must be an empty string or consist of alphanumeric characters, "
                    "'-', '_' or '.', and must start and end with an alphanumeric character")
_DNS1123_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL + "(\\." + _DNS1123_LABEL + ")*"
_DNS1123_SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
                          "'-' or '.', and must start and end with an alphanumeric character")
_QUALIFIED_NAME = re.compile(_QUALIFIED_NAME_FMT)
_LABEL_VALUE = re.compile(_LABEL_VALUE_FMT)
_DNS1123_SUBDOMAIN = re.compile(_DNS1123_SUBDOMAIN_FMT)
_INT64 = re.compile(r"[+-]?[0-9]+")


class SelectorError(ValueError):
    """A label selector that cannot be evaluated; the message says what and where."""


def _regex_error(msg: str, fmt: str, *examples: str) -> str:
    """apimachinery's validation.RegexError wording (its double spaces included)."""
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


def _utf8_len(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def qualified_name_errors(value: str) -> list[str]:
    """validation.IsQualifiedName: `[prefix/]name`, the prefix a DNS subdomain; [] when valid."""
    return list(_qualified_name_errors(value))


def label_value_errors(value: str) -> list[str]:
    """validation.IsValidLabelValue: empty, or up to 63 of [-A-Za-z0-9_.] with alphanumeric ends."""
    return list(_label_value_errors(value))


# Memoised: every monitor's selector checks the same few keys (app, team...) and many values again.
@functools.lru_cache(maxsize=8192)
def _qualified_name_errors(value: str) -> tuple[str, ...]:
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) > 2:
        return (f"a qualified name {_regex_error(_QUALIFIED_NAME_MSG, _QUALIFIED_NAME_FMT, 'MyName', 'my.name', '123-abc')}"
                " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",)
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            if _utf8_len(prefix) > 253:
                errs.append("prefix part must be no more than 253 characters")
            if not _DNS1123_SUBDOMAIN.fullmatch(prefix):
                errs.append("prefix part " + _regex_error(_DNS1123_SUBDOMAIN_MSG, _DNS1123_SUBDOMAIN_FMT, "example.com"))
    if not name:
        errs.append("name part must be non-empty")
    elif _utf8_len(name) > 63:
        errs.append("name part must be no more than 63 characters")
    if not _QUALIFIED_NAME.fullmatch(name):
        errs.append("name part " + _regex_error(_QUALIFIED_NAME_MSG, _QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc"))
    return tuple(errs)


@functools.lru_cache(maxsize=8192)
def _label_value_errors(value: str) -> tuple[str, ...]:
    errs = []
    if _utf8_len(value) > 63:
        errs.append("must be no more than 63 characters")
    if not _LABEL_VALUE.fullmatch(value):
        errs.append(_regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return tuple(errs)


def _go_quote(text: str) -> str:
    """Go's %q: printable characters as they are, the rest escaped."""
    named = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch in named:
            out.append(named[ch])
        elif ch.isprintable():
            out.append(ch)
        elif ord(ch) < 0x80:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) < 0x10000:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    return '"' + "".join(out) + '"'


def _invalid(path: str, value: str, errs: list[str]) -> str:
    """field.Invalid(path, value, detail).Error()."""
    return f"{path}: Invalid value: {_go_quote(value)}: {'; '.join(errs)}"


def _parse_int64(text: str) -> int | None:
    """strconv.ParseInt(text, 10, 64), None where Go returns an error."""
    if not _INT64.fullmatch(text):
        return None
    n = int(text)
    return n if -(1 << 63) <= n < (1 << 63) else None


@dataclass(frozen=True)
class Requirement:
    """One requirement, as labels.Requirement: `operator` is a selection.Operator value
    (in, notin, exists, !, =, ==, !=, gt, lt); `values` sorted and unique."""

    key: str
    operator: str
    values: tuple[str, ...] = ()
    from_match_labels: bool = False

    def matches(self, labels: Mapping[str, str]) -> bool:
        op, present = self.operator, self.key in labels
        if op in ("in", "=", "=="):
            return present and labels[self.key] in self.values
        if op in ("notin", "!="):
            return not present or labels[self.key] not in self.values
        if op == "exists":
            return present
        if op == "!":
            return not present
        if op in ("gt", "lt") and present and len(self.values) == 1:
            have, want = _parse_int64(labels[self.key]), _parse_int64(self.values[0])
            if have is None or want is None:
                return False
            return have > want if op == "gt" else have < want
        return False

    def __str__(self) -> str:
        """Requirement.String: `!k`, `k`, `k=v`, `k in (a,b)`, `k>3`."""
        op = self.operator
        if op == "!":
            return "!" + self.key
        if op == "exists":
            return self.key
        joined = ",".join(self.values)
        if op in ("in", "notin"):
            return f"{self.key} {op} ({joined})"
        return f"{self.key}{ {'gt': '>', 'lt': '<'}.get(op, op)}{joined}"

    def describe(self) -> str:
        """The requirement as the user wrote it, e.g. `matchLabels team=web`."""
        if self.from_match_labels:
            return f"matchLabels {self.key}={self.values[0]}"
        name = _STRUCT_NAMES.get(self.operator)
        if name is None:
            return f"requirement {self}"
        if self.values:
            return f"matchExpressions {self.key} {name} ({', '.join(self.values)})"
        return f"matchExpressions {self.key} {name}"

    def why_not(self, labels: Mapping[str, str]) -> str:
        present = self.key in labels
        op = self.operator
        if op in ("in", "=", "==", "gt", "lt") and not present or op == "exists":
            return f"label {self.key} missing"
        if op == "!":
            return f"label {self.key} is present"
        if op in ("gt", "lt"):
            return f"label {self.key}={labels[self.key]} is not {'>' if op == 'gt' else '<'} {self.values[0]}"
        if op in ("notin", "!="):
            return f"label {self.key}={labels[self.key]!s} is excluded"
        if self.from_match_labels or op != "in":
            return f"label {self.key} is {labels[self.key]!r}, not {self.values[0]!r}"
        return f"label {self.key}={labels[self.key]!s} is not in ({', '.join(self.values)})"


def _arity_error(operator: str, values: list[str]) -> bool:
    """Whether new_requirement reports the values as a whole (and so needs them shown, Go-quoted)."""
    return ((operator in ("in", "notin") and not values) or (operator in ("=", "==", "!=") and len(values) != 1)
            or (operator in ("exists", "!") and bool(values)) or (operator in ("gt", "lt") and len(values) != 1))


def new_requirement(key: str, operator: str, values: list[str] | tuple[str, ...] = (),
                    path: str = "<nil>") -> Requirement:
    """labels.NewRequirement: validates the key, the operator's arity and every value.

    Raises SelectorError with apimachinery's field-error text; `path` prefixes it
    as field.Path does (`<nil>` for none)."""
    values = list(values)
    base = "" if path == "<nil>" else path + "."
    errs = []
    key_errs = qualified_name_errors(key)
    if key_errs:
        errs.append(_invalid(f"{base}key", key, key_errs))
    vpath = f"{base}values"
    shown = "[]string{" + ", ".join(_go_quote(v) for v in values) + "}" if _arity_error(operator, values) else ""
    if operator in ("in", "notin") and not values:
        errs.append(f"{vpath}: Invalid value: {shown}: for 'in', 'notin' operators, values set can't be empty")
    elif operator in ("=", "==", "!=") and len(values) != 1:
        errs.append(f"{vpath}: Invalid value: {shown}: exact-match compatibility requires one single value")
    elif operator in ("exists", "!") and values:
        errs.append(f"{vpath}: Invalid value: {shown}: values set must be empty for exists and does not exist")
    elif operator in ("gt", "lt"):
        if len(values) != 1:
            errs.append(f"{vpath}: Invalid value: {shown}: for 'Gt', 'Lt' operators, exactly one value is required")
        errs += [f"{vpath}[{i}]: Invalid value: {_go_quote(v)}: for 'Gt', 'Lt' operators, the value must be an integer"
                 for i, v in enumerate(values) if _parse_int64(v) is None]
    elif operator not in BINARY_OPERATORS + ("exists", "!"):
        supported = ", ".join(_go_quote(o) for o in ("!", "=", "==", "in", "!=", "notin", "exists", "gt", "lt"))
        errs.append(f"{base}operator: Unsupported value: {_go_quote(operator)}: supported values: {supported}")
    for i, v in enumerate(values):
        value_errs = label_value_errors(v)
        if value_errs:
            errs.append(_invalid(f"{vpath}[{i}][{key}]", v, value_errs))
    if errs:
        raise SelectorError(errs[0] if len(errs) == 1 else "[" + ", ".join(errs) + "]")
    return Requirement(key, operator, tuple(sorted(set(values))))


@dataclass(frozen=True)
class Selector:
    """An evaluated label selector. `nothing=True` is labels.Nothing() (the nil selector)."""

    requirements: tuple[Requirement, ...] = ()
    nothing: bool = False

    @classmethod
    def everything(cls) -> "Selector":
        return cls()

    @classmethod
    def none(cls) -> "Selector":
        return cls(nothing=True)

    def empty(self) -> bool:
        """Selects everything (labels.Selector.Empty)."""
        return not self.nothing and not self.requirements

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        if self.nothing:
            return False
        labels = labels or {}
        return all(r.matches(labels) for r in self.requirements)

    def explain(self, labels: Mapping[str, str] | None, name: str = "selector") -> str | None:
        """Why `labels` do not match, or None when they do.

        E.g. `serviceMonitorSelector matchLabels team=web: label team missing`.
        """
        if self.nothing:
            return f"{name} is not set (a missing selector selects nothing; use {{}} to select everything)"
        labels = labels or {}
        for req in self.requirements:
            if not req.matches(labels):
                return f"{name} {req.describe()}: {req.why_not(labels)}"
        return None

    def __str__(self) -> str:
        """The canonical string form, e.g. `a=b,c in (d,e)` (requirements sorted by key)."""
        if self.nothing:
            return ""
        return ",".join(str(r) for r in self.requirements)


def _sorted(reqs: list[Requirement]) -> tuple[Requirement, ...]:
    return tuple(sorted(reqs, key=lambda r: r.key))


def _struct_value(value: Any, where: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise SelectorError(f"{where}: label value must be a string, got {value!r}")
    return str(value)


def _struct_requirement(key: Any, op: str, values: list, where: str, from_labels: bool = False) -> Requirement:
    """new_requirement for one matchLabels/matchExpressions entry, errors prefixed with `where`."""
    if not isinstance(key, str):
        raise SelectorError(f"{where}: invalid label key {key!r}: must be a string")
    key_errs = qualified_name_errors(key)
    if key_errs:
        raise SelectorError(f"{where}: invalid label key {key!r}: {'; '.join(key_errs)}")
    for j, v in enumerate(values):
        value_errs = label_value_errors(v)
        if value_errs:
            at = f"{where}.{key}" if from_labels else f"{where}.values[{j}]"
            raise SelectorError(f"{at}: invalid label value {v!r}: {'; '.join(value_errs)}")
    req = new_requirement(key, op, values)
    return Requirement(req.key, req.operator, req.values, from_labels)


def _expression(expr: Any, at: str) -> Requirement:
    if not isinstance(expr, Mapping):
        raise SelectorError(f"{at}: must be a mapping with key, operator and values")
    name = expr.get("operator")
    if name not in STRUCT_OPERATORS:
        raise SelectorError(f"{at}.operator: {name!r} is not a valid operator; use one of {', '.join(OPERATORS)}")
    values = expr.get("values") or []
    if not isinstance(values, list):
        raise SelectorError(f"{at}.values: must be a list of strings")
    if name in ("In", "NotIn") and not values:
        raise SelectorError(f"{at}.values: operator {name} needs at least one value")
    if name in ("Exists", "DoesNotExist") and values:
        raise SelectorError(f"{at}.values: must be empty for operator {name}")
    vals = [_struct_value(v, f"{at}.values[{j}]") for j, v in enumerate(values)]
    return _struct_requirement(expr.get("key"), STRUCT_OPERATORS[name], vals, at)


def parse_selector(spec: Mapping[str, Any] | None, where: str = "selector") -> Selector:
    """A metav1.LabelSelector dict as LabelSelectorAsSelector evaluates it.

    None gives the select-nothing selector; `{}` selects everything. Raises
    SelectorError naming `where` and the offending field.
    """
    if spec is None:
        return Selector.none()
    if not isinstance(spec, Mapping):
        raise SelectorError(f"{where}: must be a mapping with matchLabels/matchExpressions, got {type(spec).__name__}")
    unknown = set(spec) - {"matchLabels", "matchExpressions"}
    if unknown:
        raise SelectorError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}; "
                            "only matchLabels and matchExpressions are allowed")
    labels = spec.get("matchLabels") or {}
    if not isinstance(labels, Mapping):
        raise SelectorError(f"{where}.matchLabels: must be a mapping of label to value")
    exprs = spec.get("matchExpressions") or []
    if not isinstance(exprs, list):
        raise SelectorError(f"{where}.matchExpressions: must be a list")
    reqs = [_struct_requirement(key, "=", [_struct_value(labels[key], f"{where}.matchLabels.{key}")],
                                f"{where}.matchLabels", True) for key in sorted(labels, key=str)]
    reqs += [_expression(expr, f"{where}.matchExpressions[{i}]") for i, expr in enumerate(exprs)]
    return Selector(_sorted(reqs))


def matches(spec: Mapping[str, Any] | None, labels: Mapping[str, str] | None) -> bool:
    """Shorthand: does the selector dict `spec` select an object with `labels`?"""
    return parse_selector(spec).matches(labels)


# ---- the string form: labels.Parse ----------------------------------------------------------

_SPECIAL = frozenset("=!(),><")
_WHITESPACE = frozenset(" \t\r\n")
_TOKENS = {")": "ClosedPar", ",": "Comma", "!": "DoesNotExist", "==": "DoubleEquals", "=": "Equals",
           ">": "GreaterThan", "in": "In", "<": "LessThan", "!=": "NotEquals", "notin": "NotIn", "(": "OpenPar"}
_OPERATOR_TOKENS = {"In": "in", "Equals": "=", "DoubleEquals": "==", "GreaterThan": "gt", "LessThan": "lt",
                    "NotIn": "notin", "NotEquals": "!="}


def lex(text: str) -> list[tuple[str, str]]:
    """The (token, literal) pairs of labels' Lexer, ending with ("EndOfString", "")."""
    out, pos, n = [], 0, len(text)
    while True:
        while pos < n and text[pos] in _WHITESPACE:
            pos += 1
        if pos >= n or text[pos] == "\0":  # Go's lexer reads a NUL byte as the end
            out.append(("EndOfString", ""))
            return out
        if text[pos] in _SPECIAL:
            end = pos + 1  # every single special symbol is a token; take the longest that is one
            while end < n and text[end] in _SPECIAL and text[pos:end + 1] in _TOKENS:
                end += 1
            literal = text[pos:end]
        else:
            end = pos
            while end < n and text[end] not in _SPECIAL and text[end] not in _WHITESPACE and text[end] != "\0":
                end += 1
            literal = text[pos:end]
        out.append((_TOKENS.get(literal, "Identifier"), literal))
        pos = end


class _Parser:
    """labels.Parser: recursive descent over the lexed items, with its error texts."""

    def __init__(self, text: str) -> None:
        self.items = lex(text)
        self.pos = 0

    def lookahead(self, values: bool = True) -> tuple[str, str]:
        tok, lit = self.items[min(self.pos, len(self.items) - 1)]
        return ("Identifier" if values and tok in ("In", "NotIn") else tok), lit

    def consume(self, values: bool = True) -> tuple[str, str]:
        item = self.lookahead(values)
        self.pos += 1
        return item

    def parse(self) -> list[Requirement]:
        reqs: list[Requirement] = []
        while True:
            tok, lit = self.lookahead()
            if tok == "EndOfString":
                return reqs
            if tok not in ("Identifier", "DoesNotExist"):
                raise SelectorError(f"found '{lit}', expected: !, identifier, or 'end of string'")
            try:
                reqs.append(self.requirement())
            except SelectorError as exc:
                raise SelectorError(f"unable to parse requirement: {exc}") from None
            tok, lit = self.consume()
            if tok == "EndOfString":
                return reqs
            if tok != "Comma":
                raise SelectorError(f"found '{lit}', expected: ',' or 'end of string'")
            tok, lit = self.lookahead()
            if tok not in ("Identifier", "DoesNotExist"):
                raise SelectorError(f"found '{lit}', expected: identifier after ','")

    def requirement(self) -> Requirement:
        key, op = self.key_and_operator()
        if op in ("exists", "!"):
            return new_requirement(key, op)
        tok, lit = self.consume(values=False)
        if tok not in _OPERATOR_TOKENS:
            raise SelectorError(f"found '{lit}', expected: {', '.join(BINARY_OPERATORS)}")
        op = _OPERATOR_TOKENS[tok]
        values = self.value_set() if op in ("in", "notin") else self.exact_value()
        return new_requirement(key, op, sorted(values))

    def key_and_operator(self) -> tuple[str, str]:
        op = ""
        tok, lit = self.consume()
        if tok == "DoesNotExist":
            op = "!"
            tok, lit = self.consume()
        if tok != "Identifier":
            raise SelectorError(f"found '{lit}', expected: identifier")
        errs = qualified_name_errors(lit)
        if errs:
            raise SelectorError(_invalid("<nil>", lit, errs))
        if self.lookahead()[0] in ("EndOfString", "Comma") and op != "!":
            op = "exists"
        return lit, op

    def exact_value(self) -> set[str]:
        if self.lookahead()[0] in ("EndOfString", "Comma"):
            return {""}
        tok, lit = self.consume()
        if tok != "Identifier":
            raise SelectorError(f"found '{lit}', expected: identifier")
        return {lit}

    def value_set(self) -> set[str]:
        tok, lit = self.consume()
        if tok != "OpenPar":
            raise SelectorError(f"found '{lit}' expected: '('")
        tok, lit = self.lookahead()
        if tok == "ClosedPar":
            self.consume()
            return {""}
        if tok not in ("Identifier", "Comma"):
            raise SelectorError(f"found '{lit}', expected: ',', ')' or identifier")
        values = self.identifiers()
        if self.consume()[0] != "ClosedPar":
            raise SelectorError(f"found '{lit}', expected: ')'")  # upstream names the first value here
        return values

    def identifiers(self) -> set[str]:
        values: set[str] = set()
        while True:
            tok, lit = self.consume()
            if tok == "Identifier":
                values.add(lit)
                tok2, lit2 = self.lookahead()
                if tok2 == "ClosedPar":
                    return values
                if tok2 != "Comma":
                    raise SelectorError(f"found '{lit2}', expected: ',' or ')'")
            elif tok == "Comma":
                if not values:
                    values.add("")  # "(,"
                tok2 = self.lookahead()[0]
                if tok2 == "ClosedPar":
                    values.add("")  # ",)"
                    return values
                if tok2 == "Comma":
                    self.consume()
                    values.add("")  # ",,"
            else:
                raise SelectorError(f"found '{lit}', expected: ',', or identifier")


def parse(text: str | None) -> Selector:
    """labels.Parse: the string form into a Selector (requirements sorted by key).

    An empty string selects everything. Raises SelectorError with apimachinery's
    message, e.g. `unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt`.
    """
    return Selector(_sorted(_Parser(text or "").parse()))
