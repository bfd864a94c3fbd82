"""Kubernetes label selectors (metav1.LabelSelector) with upstream semantics.

A nil selector (None) selects nothing and `{}` selects everything, as
`metav1.LabelSelectorAsSelector` does; this distinction is the source of much
user confusion, so `explain` says exactly which requirement failed.

A neutral module: the pure renderer and the runtime both select by labels,
and the renderer must not import the runtime.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping

OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")

_NAME = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)$")
_PREFIX = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


class SelectorError(ValueError):
    """A label selector that cannot be evaluated; the message names the field."""


@dataclass(frozen=True)
class Requirement:
    key: str
    operator: str  # In, NotIn, Exists, DoesNotExist
    values: tuple[str, ...] = ()
    from_match_labels: bool = False

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.operator == "In":
            return self.key in labels and labels[self.key] in self.values
        if self.operator == "NotIn":
            return self.key not in labels or labels[self.key] not in self.values
        if self.operator == "Exists":
            return self.key in labels
        return self.key not in labels

    def __str__(self) -> str:
        if self.operator == "Exists":
            return self.key
        if self.operator == "DoesNotExist":
            return "!" + self.key
        if self.from_match_labels:
            return f"{self.key}={self.values[0]}"
        op = "in" if self.operator == "In" else "notin"
        return f"{self.key} {op} ({','.join(sorted(self.values))})"

    def describe(self) -> str:
        """The requirement as the user wrote it, e.g. `matchLabels team=web`."""
        if self.from_match_labels:
            return f"matchLabels {self.key}={self.values[0]}"
        if self.values:
            return f"matchExpressions {self.key} {self.operator} ({', '.join(self.values)})"
        return f"matchExpressions {self.key} {self.operator}"

    def why_not(self, labels: Mapping[str, str]) -> str:
        present = self.key in labels
        if self.operator == "In":
            if not present:
                return f"label {self.key} missing"
            if self.from_match_labels:
                return f"label {self.key} is {labels[self.key]!r}, not {self.values[0]!r}"
            return f"label {self.key}={labels[self.key]!s} is not in ({', '.join(self.values)})"
        if self.operator == "NotIn":
            return f"label {self.key}={labels[self.key]!s} is excluded"
        if self.operator == "Exists":
            return f"label {self.key} missing"
        return f"label {self.key} is present"


@dataclass(frozen=True)
class Selector:
    """An evaluated label selector. `nothing=True` is the nil selector."""

    requirements: tuple[Requirement, ...] = ()
    nothing: bool = False

    @classmethod
    def everything(cls) -> "Selector":
        return cls()

    @classmethod
    def none(cls) -> "Selector":
        return cls(nothing=True)

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
        return ",".join(str(r) for r in sorted(self.requirements, key=lambda r: r.key))


def _check_key(key: Any, where: str) -> str:
    if not isinstance(key, str) or not key:
        raise SelectorError(f"{where}: label key must be a non-empty string, got {key!r}")
    prefix, _, name = key.rpartition("/")
    if prefix and (len(prefix) > 253 or not _PREFIX.match(prefix)):
        raise SelectorError(f"{where}: invalid label key prefix {prefix!r} in {key!r}: must be a DNS subdomain")
    if len(name) > 63 or not _NAME.match(name):
        raise SelectorError(
            f"{where}: invalid label key {key!r}: the name part must be 1-63 characters of "
            "[A-Za-z0-9-_.], starting and ending with an alphanumeric"
        )
    return key


def _check_value(value: Any, where: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise SelectorError(f"{where}: label value must be a string, got {value!r}")
    value = str(value)
    if len(value) > 63 or not _VALUE.match(value):
        raise SelectorError(
            f"{where}: invalid label value {value!r}: at most 63 characters of [A-Za-z0-9-_.], "
            "starting and ending with an alphanumeric"
        )
    return value


def parse_selector(spec: Mapping[str, Any] | None, where: str = "selector") -> Selector:
    """Turn a metav1.LabelSelector dict into a Selector.

    None gives the select-nothing selector; `{}` selects everything. Raises
    SelectorError naming `where` and the offending field.
    """
    if spec is None:
        return Selector.none()
    if not isinstance(spec, Mapping):
        raise SelectorError(f"{where}: must be a mapping with matchLabels/matchExpressions, got {type(spec).__name__}")
    unknown = set(spec) - {"matchLabels", "matchExpressions"}
    if unknown:
        raise SelectorError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}; only matchLabels and matchExpressions are allowed")
    reqs: list[Requirement] = []
    labels = spec.get("matchLabels") or {}
    if not isinstance(labels, Mapping):
        raise SelectorError(f"{where}.matchLabels: must be a mapping of label to value")
    for key in sorted(labels):
        _check_key(key, f"{where}.matchLabels")
        reqs.append(Requirement(key, "In", (_check_value(labels[key], f"{where}.matchLabels.{key}"),), True))
    exprs = spec.get("matchExpressions") or []
    if not isinstance(exprs, list):
        raise SelectorError(f"{where}.matchExpressions: must be a list")
    for i, expr in enumerate(exprs):
        at = f"{where}.matchExpressions[{i}]"
        if not isinstance(expr, Mapping):
            raise SelectorError(f"{at}: must be a mapping with key, operator and values")
        key = _check_key(expr.get("key"), f"{at}.key")
        op = expr.get("operator")
        if op not in OPERATORS:
            raise SelectorError(f"{at}.operator: {op!r} is not a valid operator; use one of {', '.join(OPERATORS)}")
        values = expr.get("values") or []
        if not isinstance(values, list):
            raise SelectorError(f"{at}.values: must be a list of strings")
        if op in ("In", "NotIn") and not values:
            raise SelectorError(f"{at}.values: operator {op} needs at least one value")
        if op in ("Exists", "DoesNotExist") and values:
            raise SelectorError(f"{at}.values: must be empty for operator {op}")
        vals = tuple(_check_value(v, f"{at}.values[{j}]") for j, v in enumerate(values))
        reqs.append(Requirement(key, op, vals))
    return Selector(tuple(reqs))


def matches(spec: Mapping[str, Any] | None, labels: Mapping[str, str] | None) -> bool:
    """Shorthand: does the selector dict `spec` select an object with `labels`?"""
    return parse_selector(spec).matches(labels)
