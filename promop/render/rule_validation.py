"""Validation of a PrometheusRule spec, so that every rule file we write loads in Prometheus.

Prometheus refuses a whole rule file (and keeps its old rules) when one rule is
invalid; upstream's operator checks with `rulefmt.Parse`. We check the same
things in Python: group names, durations, record/alert, PromQL (promql-parser),
label and annotation names, and alert templates (gotemplate.py). Each problem
is returned as (field path, message) so the user can find and fix it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any

import promql_parser

from promop.duration import DurationError, parse_duration
from promop.render.gotemplate import TemplateError, check_template, functions_for
from promop.render.versions import Version

_LEGACY_LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
_LEGACY_METRIC_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
UTF8_NAMES_SINCE = "3.0.0"  # Prometheus 3 accepts any UTF-8 label/metric name

Issue = tuple[str, str]  # (field path, message)


def check_duration(value: Any) -> str | None:
    """None if `value` is a Prometheus duration, else why not."""
    try:
        parse_duration(value)
    except DurationError:
        return f"{value!r} is not a duration; use a form like 30s, 5m, 1h30m or 0"
    return None


# PromQL functions whose availability depends on the Prometheus version (only well-known cases).
PROMQL_FUNCTION_MIN_VERSION = {
    "double_exponential_smoothing": "3.0.0",  # holt_winters' new name
    **dict.fromkeys(("sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh",
                     "atanh", "deg", "rad", "pi"), "2.31.0"),
}
PROMQL_FUNCTION_REMOVED = {"holt_winters": ("3.0.0", "renamed double_exponential_smoothing")}
# A call names its function in the expression's text: without one of these words, there is nothing to check.
_GATED_NAME = re.compile("(?<![A-Za-z0-9_:])(?:" + "|".join(sorted({*PROMQL_FUNCTION_MIN_VERSION, *PROMQL_FUNCTION_REMOVED}))
                         + ")(?![A-Za-z0-9_:])", re.IGNORECASE)


def _register_removed_functions() -> None:
    """promql-parser follows Prometheus 3; teach it holt_winters so 2.x rules still parse."""
    matrix, scalar, vector = (promql_parser.ValueType.Matrix, promql_parser.ValueType.Scalar,
                              promql_parser.ValueType.Vector)
    try:
        promql_parser.register_extra_functions(
            [promql_parser.Function("holt_winters", [matrix, scalar, scalar], vector)])
    except ValueError:
        pass  # already registered in this process


_register_removed_functions()


@functools.lru_cache(maxsize=65536)  # pure; rules repeat across re-renders
def check_promql(expr: str, version: Version | None = None) -> str | None:
    """None if `expr` parses as PromQL for this Prometheus version, else why not."""
    try:
        tree = promql_parser.parse(expr)
    except (ValueError, TypeError) as exc:
        return f"PromQL does not parse: {exc}"
    if version is None or not _GATED_NAME.search(expr):
        return None  # no version-gated function is named in the text, so none is called: skip the walk
    calls: list[str] = []
    promql_parser.walk(tree, pre_visit=lambda n: calls.append(n.func.name) if isinstance(n, promql_parser.Call)
                       else None)
    for name in calls:
        minimum = PROMQL_FUNCTION_MIN_VERSION.get(name)
        if minimum and not version.at_least(minimum):
            return f"function {name}() needs Prometheus >= {minimum}, this Prometheus is {version}"
        removed = PROMQL_FUNCTION_REMOVED.get(name)
        if removed and version.at_least(removed[0]):
            return f"function {name}() was {removed[1]} in Prometheus {removed[0]}; this Prometheus is {version}"
    return None


def _name_ok(name: Any, version: Version, metric: bool = False) -> bool:
    if not isinstance(name, str) or not name:
        return False
    if version.at_least(UTF8_NAMES_SINCE):
        return True
    return bool((_LEGACY_METRIC_NAME if metric else _LEGACY_LABEL_NAME).match(name))


def _check_labels(labels: Any, path: str, version: Version, what: str = "label") -> list[Issue]:
    if labels is None:
        return []
    if not isinstance(labels, Mapping):
        return [(path, f"must be a map of {what} names to strings")]
    out = []
    for key, value in labels.items():
        if not _name_ok(key, version) or (what == "label" and key == "__name__"):
            hint = "" if version.at_least(UTF8_NAMES_SINCE) else " (before Prometheus 3: [a-zA-Z_][a-zA-Z0-9_]*)"
            out.append((f"{path}.{key}", f"invalid {what} name {key!r}{hint}"))
        if not isinstance(value, str):
            out.append((f"{path}.{key}", f"{what} value must be a string, got {value!r}"))
    return out


@functools.lru_cache(maxsize=65536)
def _template_problem(text: str, version: tuple[int, int, int]) -> str | None:
    try:
        check_template(text, functions=functions_for(version))
    except TemplateError as exc:
        return f"invalid template: {exc}"
    return None


def _check_templates(values: Any, path: str, version: Version) -> list[Issue]:
    out = []
    for key, value in (values or {}).items() if isinstance(values, Mapping) else ():
        if isinstance(value, str):
            problem = _template_problem(value, version.parts)
            if problem:
                out.append((f"{path}.{key}", problem))
    return out


def _check_rule(rule: Any, path: str, version: Version) -> list[Issue]:
    if not isinstance(rule, Mapping):
        return [(path, "a rule must be a mapping with record or alert, and expr")]
    out: list[Issue] = []
    record, alert = rule.get("record"), rule.get("alert")
    if record and alert:
        out.append((path, "only one of 'record' and 'alert' may be set"))
    elif not record and not alert:
        out.append((path, "one of 'record' or 'alert' must be set"))
    expr = rule.get("expr")
    if isinstance(expr, int) and not isinstance(expr, bool):
        expr = str(expr)
    if not isinstance(expr, str) or not expr.strip():
        out.append((f"{path}.expr", "field 'expr' must be set to a PromQL expression"))
    else:
        problem = check_promql(expr, version)
        if problem:
            out.append((f"{path}.expr", problem))
    for key in ("for", "keep_firing_for"):
        if rule.get(key) is not None:
            problem = check_duration(rule[key])
            if problem:
                out.append((f"{path}.{key}", problem))
    if record:
        if not _name_ok(record, version, metric=True):
            out.append((f"{path}.record", f"invalid recording rule name {record!r}: must be a valid metric name"))
        for key in ("annotations", "for", "keep_firing_for"):
            if rule.get(key):
                out.append((f"{path}.{key}", f"invalid field '{key}' in recording rule {record!r}"))
    out += _check_labels(rule.get("labels"), f"{path}.labels", version)
    if alert:
        out += _check_labels(rule.get("annotations"), f"{path}.annotations", version, what="annotation")
        out += _check_templates(rule.get("labels"), f"{path}.labels", version)
        out += _check_templates(rule.get("annotations"), f"{path}.annotations", version)
    return out


def validate_rule_spec(spec: Any, version: Version) -> list[Issue]:
    """Every problem that would make Prometheus refuse the rule file made from `spec`."""
    if spec is None:
        return []  # an empty PrometheusRule renders to an empty (valid) rule file
    if not isinstance(spec, Mapping):
        return [("spec", "must be a mapping with a 'groups' list")]
    groups = spec.get("groups") or []
    if not isinstance(groups, list):
        return [("spec.groups", "must be a list of rule groups")]
    out: list[Issue] = []
    seen: dict[str, int] = {}
    for i, group in enumerate(groups):
        path = f"spec.groups[{i}]"
        if not isinstance(group, Mapping):
            out.append((path, "a rule group must be a mapping with name and rules"))
            continue
        name = group.get("name")
        if not isinstance(name, str) or not name:
            out.append((f"{path}.name", "group name must not be empty"))
        elif name in seen:
            out.append(
                (f"{path}.name", f"group name {name!r} is repeated (first used by spec.groups[{seen[name]}]); "
                 "group names must be unique within a PrometheusRule")
            )
        else:
            seen[name] = i
        for key in ("interval", "query_offset"):
            if group.get(key) is not None:
                problem = check_duration(group[key])
                if problem:
                    out.append((f"{path}.{key}", problem))
        limit = group.get("limit")
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
            out.append((f"{path}.limit", f"must be a non-negative integer, got {limit!r}"))
        out += _check_labels(group.get("labels"), f"{path}.labels", version)
        rules = group.get("rules") or []
        if not isinstance(rules, list):
            out.append((f"{path}.rules", "must be a list of rules"))
            continue
        for j, rule in enumerate(rules):
            out += _check_rule(rule, f"{path}.rules[{j}]", version)
    return out
