"""scalingModifiers' formula (§2.8): a subset of expr-lang (github.com/expr-lang/expr), our own parser.

Why our own: KEDA evaluates `advanced.scalingModifiers.formula` with expr-lang; Python's eval() would
be unsafe and means something else. The subset covers what KEDA's docs and users write: numbers,
trigger names, + - * / % ** (and ^), unary - + !, comparisons, && || ! (and/or/not), the ternary
`?:`, `??`, parentheses, array literals, and the builtins count/max/min/abs/float/int/ceil/floor/round
with closures over `#` (`count([a, b], {# > 1})`).

    compile_formula(text) -> Formula        FormulaError: syntax error or an unknown function
    Formula.names                           the trigger names it reads
    Formula.evaluate(values) -> float|None  values: name -> float, or None for a failing trigger (nil)
"""

from __future__ import annotations

from dataclasses import dataclass


class FormulaError(ValueError):
    """The formula does not compile or cannot be evaluated; the message says where."""


@dataclass(slots=True)
class Formula:
    text: str
    names: frozenset[str]
    _ast: object = None

    def evaluate(self, values: dict[str, float | None]) -> float | None:
        """The formula's value wrapped in float(...) as KEDA wraps it; None when it yields nil (`??` chains
        over failing triggers). Raises FormulaError for an unknown name or a type error."""
        raise NotImplementedError


def compile_formula(text: str, known_names: set[str] | None = None) -> Formula:
    """Parse `text`; with `known_names`, refer to no other variable (KEDA compiles with the trigger
    names as the environment: "unknown name x (1:1)")."""
    raise NotImplementedError
