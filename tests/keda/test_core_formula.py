"""scalingModifiers' formula engine: KEDA's documented examples (docs concepts/scaling-deployments.md,
e2e tests) and expr-lang's language rules (github.com/expr-lang/expr docs: operators, precedence,
builtins, closures with #)."""

from __future__ import annotations

import math

import pytest

from promop.keda.formula import FormulaError, compile_formula


def ev(text, **values):
    return compile_formula(text).evaluate(values)


# --- KEDA's examples --------------------------------------------------------------------------------

def test_average_of_two_triggers():
    assert ev("(trig_one + trig_two)/2", trig_one=4, trig_two=7) == 5.5


def test_ternary_example():
    f = "trig_one > 2 ? trig_one + trig_two : 1"
    assert ev(f, trig_one=3, trig_two=4) == 7
    assert ev(f, trig_one=2, trig_two=4) == 1


def test_count_with_closure_example():
    f = "count([trig_one,trig_two,trig_three],{#>1}) > 1 ? 5 : 0"
    assert ev(f, trig_one=2, trig_two=3, trig_three=0) == 5
    assert ev(f, trig_one=2, trig_two=1, trig_three=0) == 0


def test_nested_ternaries():
    f = "trig_one < 2 ? trig_one + 1 : trig_two > 5 ? 10 : trig_two"
    assert ev(f, trig_one=1, trig_two=9) == 2
    assert ev(f, trig_one=3, trig_two=9) == 10
    assert ev(f, trig_one=3, trig_two=4) == 4


def test_nil_coalescing_chain_for_failing_triggers():
    assert ev("a ?? b ?? 8", a=None, b=None) == 8
    assert ev("a ?? b ?? 8", a=None, b=3) == 3
    assert ev("a ?? b ?? 8", a=1, b=3) == 1


def test_formula_returning_nil_passes_through():
    assert ev("a ?? b", a=None, b=None) is None


def test_nil_without_coalescing_is_an_error():
    with pytest.raises(FormulaError, match="invalid operation"):
        ev("a + b", a=None, b=1)


def test_result_is_wrapped_in_float():
    assert isinstance(ev("count([a], {# > 0})", a=1), float)
    with pytest.raises(FormulaError):
        ev("a > 1", a=2)      # float(bool) does not convert in expr-lang


# --- the language -------------------------------------------------------------------------------------

@pytest.mark.parametrize("text,value", [
    ("1 + 2 * 3", 7), ("(1 + 2) * 3", 9), ("7 / 2", 3.5), ("8 / 4", 2.0), ("7 % 3", 1), ("-7 % 3", -1),
    ("2 ** 3", 8), ("2 ^ 3", 8), ("2 ** 3 ** 2", 512), ("-2 ** 2", -4), ("10 - 2 - 3", 5),
    ("1 < 2 && 2 < 3 ? 1 : 0", 1), ("1 > 2 || 2 > 3 ? 1 : 0", 0), ("!(1 > 2) ? 1 : 0", 1),
    ("not (1 > 2) ? 1 : 0", 1), ("1 == 1.0 ? 1 : 0", 1), ("1 != 2 ? 1 : 0", 1), ("2 >= 2 and 2 <= 2 ? 1 : 0", 1),
    ("max(1, 5, 3)", 5), ("min(4, 2)", 2), ("max([1, 9, 3])", 9), ("abs(-3)", 3), ("int(3.7)", 3),
    ("float(2)", 2.0), ("ceil(1.2)", 2), ("floor(1.8)", 1), ("round(2.5)", 3), ("round(-2.5)", -3),
    ("sum([1, 2, 3])", 6), ("len([1, 2, 3])", 3), ("count([1, 2, 3], # > 1)", 2),
    ("all([1, 2], {# > 0}) ? 1 : 0", 1), ("any([1, 2], {# > 1}) ? 1 : 0", 1), ("none([1, 2], {# > 5}) ? 1 : 0", 1),
    ("one([1, 2], {# > 1}) ? 1 : 0", 1), ("sum(map([1, 2], {# * 10}))", 30), ("len(filter([1, 2, 3], {# >= 2}))", 2),
    ("2 in [1, 2] ? 1 : 0", 1), ("nil ?? 4", 4), ("1_000 + 0x10", 1016), (".5 + 1e1", 10.5),
    ("1 ?? 2 + 3", 4),         # ?? binds tighter than +
    ("1 + 2 > 2 ? 1 : 0", 1),   # arithmetic before comparison
])
def test_language(text, value):
    assert compile_formula(text).evaluate({}) == value


def test_division_by_zero_is_inf_not_an_exception():
    assert math.isinf(ev("a / 0", a=1.0))


def test_modulo_needs_integers():
    with pytest.raises(FormulaError, match="%"):
        ev("a % 2", a=5.0)


def test_names():
    assert compile_formula("a + max(b, c) ?? d").names == {"a", "b", "c", "d"}
    assert compile_formula("count([x], {# > 1})").names == {"x"}


@pytest.mark.parametrize("text", ["a +", "(a + b", "a b", "a ? b", "[1, 2", "a + * b", "", "   ", "1..2", "a @ b"])
def test_syntax_errors(text):
    with pytest.raises(FormulaError):
        compile_formula(text)


def test_unknown_name_with_position():
    with pytest.raises(FormulaError, match=r"^unknown name cpu_trig \(1:5\)$"):
        compile_formula("a + cpu_trig", known_names={"a"})


def test_unknown_function():
    with pytest.raises(FormulaError, match=r"unknown func sqrt \(1:1\)"):
        compile_formula("sqrt(a)")


def test_hash_outside_a_closure():
    with pytest.raises(FormulaError, match="outside predicate"):
        compile_formula("# + 1")


def test_missing_value_at_evaluation():
    with pytest.raises(FormulaError, match="unknown name b"):
        compile_formula("a + b").evaluate({"a": 1})


def test_non_bool_condition():
    with pytest.raises(FormulaError, match="non-bool"):
        ev("a ? 1 : 2", a=1)
