"""Label selector strings as prometheus-adapter turns them into PromQL label matchers.

`labelSelector=app=web` (which objects) and `metricLabelSelector=verb in (GET,PUT)`
(which series) arrive as strings; apimachinery's `labels.Parse` (promop.labelselector)
turns them into requirements sorted by key, with values sorted, and prometheus-adapter
converts each to a matcher: `=` → `=` (or `=~` with several values), `!=` → `!=`,
`in` → `=~"a|b"`, `notin` → `!~`, `exists` → `!=""`, `!key` → `=""`.
`>` and `<` have no PromQL equivalent and are refused.
"""

from __future__ import annotations

from promop.labelselector import Requirement, SelectorError, parse
from promop.render.gotemplate_exec import go_quote

__all__ = ["Requirement", "SelectorError", "label_eq", "matcher_for", "parse_selector"]


def parse_selector(text: str | None, what: str = "labelSelector") -> list[Requirement]:
    """labels.Parse of a query parameter; the error names the parameter and the text."""
    try:
        return list(parse(text).requirements)
    except SelectorError as exc:
        raise SelectorError(f"{what} {text!r}: {exc}") from None


def label_eq(label: str, value: str) -> str:
    return f"{label}={go_quote(value)}"


_ONE = {"=": "=", "==": "=", "!=": "!=", "in": "=~", "notin": "!~"}
_MANY = {"=": "=~", "==": "=~", "in": "=~", "!=": "!~", "notin": "!~"}


def matcher_for(req: Requirement) -> tuple[str, str]:
    """(PromQL matcher, the values joined by `|`) for one requirement, as upstream builds them."""
    values = list(req.values)
    if req.operator in ("gt", "lt"):
        raise SelectorError(f"operator {'>' if req.operator == 'gt' else '<'} ({req}) has no PromQL equivalent")
    if not values:
        op, target = {"exists": "!=", "!": "="}[req.operator], ""
    elif len(values) == 1:
        op, target = _ONE[req.operator], values[0]
    else:
        op, target = _MANY[req.operator], "|".join(values)
    return f"{req.key}{op}{go_quote(target)}", "|".join(values)
