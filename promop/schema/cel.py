"""CEL for `x-kubernetes-validations` rules, on a maintained CEL implementation.

The language (parser, macros `has`/`all`/`exists`/`exists_one`/`map`/`filter`, operators, doubles,
`size`, conversions, error absorption in `&&`/`||`) is the `cel` package's
(common-expression-language: Rust's cel-interpreter with Python bindings). Kubernetes' own
libraries (strings, lists, regex `find`/`findAll`, `quantity`, `url`) come from
promop.schema.cel_library, and so does `matches`: the package's is Rust's regex, so a rule's
`matches(` is compiled as `re2Matches(` (RE2, as cel-go).

    compile_error(expression) -> str | None      None if it compiles, else the compiler's message
    compile_rule(expression) -> Rule             raises Unsupported (does not compile, or calls a
                                                 function neither CEL nor Kubernetes' libraries have)
    rule(self_value, old_self=NO_OLD) -> bool    raises EvalError when evaluation fails
    rule.transition                              the rule reads `oldSelf`: only checked on update,
                                                 when the old value exists (without one it passes)

A rule calling a function we do not provide (`ip()`, `cidr()`, `format()`, `authorizer`, ...) is
Unsupported: the caller reports it as such, never guesses.
"""

from __future__ import annotations

import logging
import re
import sys
import types
from functools import lru_cache
from typing import Any

from promop.schema.cel_library import FUNCTIONS


class Unsupported(Exception):
    """The rule does not compile, or needs a CEL function we do not provide."""


class EvalError(Exception):
    """The rule could not be evaluated (no such key, a function refused its arguments, ...)."""


NO_OLD = object()

# The functions (operators included) the `cel` package implements itself, by the names its
# compiled programs report them under. Macros (has, all, exists, ...) are not listed there.
_BUILTIN = frozenset({
    "!_", "-_", "@in", "@not_strictly_false", "_!=_", "_%_", "_&&_", "_*_", "_+_", "_-_", "_/_",
    "_<_", "_<=_", "_==_", "_>_", "_>=_", "_?_:_", "_[_]", "_||_", "bool", "bytes", "contains",
    "double", "duration", "dyn", "endsWith", "int", "matches", "size", "startsWith", "string",
    "timestamp", "type", "uint", "getDate", "getDayOfMonth", "getDayOfWeek", "getDayOfYear",
    "getFullYear", "getHours", "getMilliseconds", "getMinutes", "getMonth", "getSeconds",
})
_KNOWN = _BUILTIN | frozenset(FUNCTIONS)
# Namespaced CEL extension libraries (`math.greatest(...)`, `sets.contains(...)`): the package
# reads the namespace as a variable, so a rule naming one is Unsupported, not an evaluation error.
_NAMESPACES = frozenset({"math", "sets", "base64", "optional", "strings", "lists", "encoders"})


class _QuietFunctionFailures(logging.Filter):
    """The `cel` package logs a warning whenever a Python function raises; for us that is an
    ordinary rule failure, reported with the rule, so the duplicate log line is dropped."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "Python function" not in record.getMessage()


logging.getLogger("cel").addFilter(_QuietFunctionFailures())


def _cel() -> Any:
    """The CEL package, imported at first use, without its command line.

    The package's `__init__` imports `cel.cli`, its REPL (typer, prompt_toolkit, rich, pygments):
    ~350 modules, 0.2 s and 21 MiB of RSS, measured, in every process that validates a rule (the
    operator renders with it at start-up, on the path of its first sync, and so does its render
    worker). We never run that REPL: an empty module stands in for it, put there only when the
    package is not imported yet (then `from . import cli` finds it and loads nothing)."""
    if "cel" not in sys.modules:
        sys.modules.setdefault("cel.cli", types.ModuleType("cel.cli"))
    import cel

    return cel


def compile_error(expression: str) -> str | None:
    """None if `expression` compiles as CEL, else the compiler's message (as the apiserver
    refuses a CRD whose rule does not compile)."""
    try:
        _cel().compile(expression)
    except Exception as e:  # noqa: BLE001 - the package raises ValueError or others for bad syntax
        return " ".join(str(e).split("\n", 1)[0].split())
    return None


class Rule:
    """One compiled rule, callable on a value (and on its old value for transition rules)."""

    def __init__(self, expression: str, program: Any, variables: frozenset[str], functions: frozenset[str]):
        self.expression = expression
        self.transition = "oldSelf" in variables
        self._program = program
        # only the library functions the rule calls: wrapping all of them per evaluation costs
        # more than most rules' evaluation
        self._functions = {name: FUNCTIONS[name] for name in functions if name in FUNCTIONS}

    def __call__(self, value: Any, old_self: Any = NO_OLD) -> bool:
        if self.transition and old_self is NO_OLD:
            return True  # a transition rule is only checked on update, when oldSelf exists
        result = self.evaluate(value, old_self)
        if not isinstance(result, bool):
            raise EvalError(f"rule evaluated to {type(result).__name__}, want bool")
        return result

    def evaluate(self, value: Any, old_self: Any = NO_OLD) -> Any:
        """The expression's value (a message expression's string, say); EvalError on failure."""
        context = dict(self._functions, self=value)  # a plain dict: cheaper than a cel.Context
        if old_self is not NO_OLD:
            context["oldSelf"] = old_self
        try:
            return self._program.execute(context)
        except Exception as e:  # noqa: BLE001 - RuntimeError, TypeError, KeyError, IndexError...
            raise EvalError(_clean(e)) from None

    def evaluate_with(self, variables: dict[str, Any]) -> Any:
        """The expression's value with other variables than `self` bound (admission webhooks'
        matchConditions bind `object`, `oldObject`, `request`); EvalError on failure."""
        try:
            return self._program.execute(dict(self._functions, **variables))
        except Exception as e:  # noqa: BLE001 - as evaluate
            raise EvalError(_clean(e)) from None


def _clean(error: Exception) -> str:
    text = str(error).split("\n", 1)[0]
    if isinstance(error, KeyError):
        return f"no such key: {text.strip(chr(39))}"
    for noise in (". Check function arguments and their types.", "Python function call failed: ",
                  "LibraryError: ", "QuantityError: "):
        text = text.replace(noise, "")
    return text


_STRING_START = re.compile(r"[rRbB]{0,2}('''|\"\"\"|'|\")")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _with_re2_matches(expression: str) -> str:
    """`matches(` (method or function) outside string literals becomes `re2Matches(`, so regexes
    are RE2's as in cel-go, not the `cel` package's built-in Rust regex."""
    out, pos = [], 0
    while pos < len(expression):
        string = _STRING_START.match(expression, pos)
        if string:
            raw = "r" in string.group(0)[: -len(string.group(1))].lower()
            end = _string_end(expression, string.end(), string.group(1), raw)
            out.append(expression[pos:end])
            pos = end
            continue
        ident = _IDENT.match(expression, pos)
        if ident:
            word = ident.group(0)
            if word == "matches" and expression[ident.end():].lstrip().startswith("("):
                word = "re2Matches"
            out.append(word)
            pos = ident.end()
            continue
        out.append(expression[pos])
        pos += 1
    return "".join(out)


def _string_end(text: str, pos: int, quote: str, raw: bool) -> int:
    while pos < len(text):
        if not raw and text[pos] == "\\":
            pos += 2
        elif text.startswith(quote, pos):
            return pos + len(quote)
        else:
            pos += 1
    return len(text)


@lru_cache(maxsize=1024)
def compile_rule(expression: str) -> Rule:
    """The compiled rule; Unsupported when it does not compile or needs a function we lack."""
    try:
        program = _cel().compile(_with_re2_matches(expression))
    except Exception as e:  # noqa: BLE001
        raise Unsupported(f"does not compile: {' '.join(str(e).split(chr(10), 1)[0].split())}") from None
    unknown = sorted(set(program.functions()) - _KNOWN)
    if unknown:
        raise Unsupported(f"uses CEL functions promop does not provide: {', '.join(unknown)}")
    libraries = sorted(set(program.variables()) & _NAMESPACES)
    if libraries:
        raise Unsupported(f"uses CEL libraries promop does not provide: {', '.join(libraries)}")
    return Rule(expression, program, frozenset(program.variables()), frozenset(program.functions()))
