"""The `labelSelector`/`fieldSelector` query parameters as predicates over plain object dicts.

Parsing is apimachinery's (promop.labelselector, promop.fieldselector); what stays here
is the apiserver's side: a parse error is a 400, and a field label is read from the
object by its dotted path (which labels a kind supports is checked in server.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from promop.fieldselector import parse_field_selector as _parse_fields
from promop.labelselector import Requirement, SelectorError, parse
from promop.sandbox.errors import bad_request


def parse_label_selector(text: str | None) -> list[Requirement]:
    """labels.Parse; a malformed selector is a 400 with apimachinery's message."""
    try:
        return list(parse(text).requirements)
    except SelectorError as exc:
        raise bad_request(str(exc)) from None


@dataclass(frozen=True)
class FieldRequirement:
    """One field term, with the object path its field label is read from."""

    path: tuple[str, ...]
    negate: bool
    value: str

    def matches(self, obj: dict) -> bool:
        current = obj
        for part in self.path:
            current = current.get(part) if isinstance(current, dict) else None
        actual = "" if current is None else str(current)
        if isinstance(current, bool):
            actual = "true" if current else "false"
        return (actual != self.value) if self.negate else (actual == self.value)


def parse_field_selector(text: str | None) -> list[FieldRequirement]:
    """fields.ParseSelector; a malformed selector is a 400."""
    try:
        terms = _parse_fields(text)
    except SelectorError as exc:
        raise bad_request(str(exc)) from None
    return [FieldRequirement(tuple(t.field.split(".")), t.operator == "!=", t.value) for t in terms]


Predicate = Callable[[dict], bool]


def object_predicate(labels: list[Requirement], fields: list[FieldRequirement]) -> Predicate | None:
    """One predicate over an object dict; None when nothing is selected against."""
    if not labels and not fields:
        return None

    def predicate(obj: dict) -> bool:
        object_labels = (obj.get("metadata") or {}).get("labels") or {}
        return all(r.matches(object_labels) for r in labels) and \
            all(f.matches(obj) for f in fields)

    return predicate
