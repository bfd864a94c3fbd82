"""`x-kubernetes-validations`: every CEL rule of a schema, evaluated where the apiserver evaluates it.

    rule_violations(obj, schema, old=NO_OLD) -> list[Violation]
    unsupported_rules(schema) -> list[str]       "path: rule: why" for rules promop cannot evaluate

Why a walk of its own rather than a jsonschema keyword: transition rules need the old value of the
same node (`oldSelf`), which the apiserver correlates by property name, by map key and, in lists,
only by `x-kubernetes-list-map-keys` (items of other lists have no oldSelf).

The apiserver's wording: a false rule is `Invalid value: "<schema type>": <message>`, with `message`,
or a `messageExpression`'s string, or `failed rule: <rule>`; `reason` turns it into `Forbidden`,
`Required value` or `Duplicate value`; `fieldPath` (`.spec.x`, `['key']`) says where. An evaluation
error is `<error> evaluating rule: <message or rule>`. A rule outside what promop.schema.cel
provides is skipped (listed by unsupported_rules), never guessed.
"""

from __future__ import annotations

import json
import re
from typing import Any, Iterator

from promop.schema import cel
from promop.schema.cel import NO_OLD
from promop.schema.messages import Violation
from promop.schema.per_schema import PerSchema

_FIELD_PATH_PART = re.compile(r"\.([A-Za-z_$][A-Za-z0-9_$-]*)|\[\s*'((?:[^'\\]|\\.)*)'\s*\]|\[(\d+)\]")


def _rule_nodes(schema: Any, path: str) -> Iterator[tuple[str, dict]]:
    if not isinstance(schema, dict):
        return
    if schema.get("x-kubernetes-validations"):
        yield path, schema
    for name, sub in (schema.get("properties") or {}).items():
        yield from _rule_nodes(sub, f"{path}.{name}" if path else name)
    for word, suffix in (("items", "[*]"), ("additionalProperties", "[*]")):
        yield from _rule_nodes(schema.get(word), path + suffix)


def unsupported_rules(schema: dict) -> list[str]:
    """The rules promop skips, each with where it is and why (for reports; never silently)."""
    out = []
    for path, node in _rule_nodes(schema, ""):
        for rule in node["x-kubernetes-validations"]:
            try:
                cel.compile_rule(rule.get("rule", ""))
            except cel.Unsupported as e:
                out.append(f"{path or '<root>'}: {rule.get('rule', '')}: {e}")
    return out


class _Plan:
    """The parts of a schema that lead to rules: built once per schema, so a big CRD with a few
    rules costs a walk over those few paths, not over the whole schema, per object."""

    __slots__ = ("schema", "rules", "props", "extra", "items")

    def __init__(self, schema: dict):
        self.schema = schema
        self.rules = list(schema.get("x-kubernetes-validations") or [])
        props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
        self.props = {k: p for k, p in ((k, _plan(v)) for k, v in props.items()) if p is not None}
        self.extra = _plan(schema.get("additionalProperties"))
        self.items = _plan(schema.get("items"))


def _plan(schema: Any) -> _Plan | None:
    if not isinstance(schema, dict):
        return None
    plan = _Plan(schema)
    return plan if plan.rules or plan.props or plan.extra or plan.items else None


_plan_for = PerSchema(_plan)  # a schema's plan (None: no rules), built once


def rule_violations(obj: Any, schema: dict, old: Any = NO_OLD) -> list[Violation]:
    """Every failed rule of `schema` on `obj` (with `old`, the stored object, on update)."""
    out: list[Violation] = []
    plan = _plan_for(schema)
    if plan is not None:
        _walk(obj, old, plan, "", out, root=True)
    return out


def _child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _walk(value: Any, old: Any, plan: _Plan, path: str, out: list[Violation], root: bool = False) -> None:
    if value is None:
        return
    if plan.rules:
        seen = _rule_view(value) if root else value
        old_seen = _rule_view(old) if root and old is not NO_OLD else old
        out.extend(_check(seen, old_seen, plan.schema, path))
    if isinstance(value, dict):
        _walk_object(value, old, plan, path, out, root)
    elif isinstance(value, list) and plan.items is not None:
        olds = _map_list_olds(old, plan.schema)
        for n, item in enumerate(value):
            _walk(item, olds(item), plan.items, f"{path}[{n}]", out)


def _walk_object(value: dict, old: Any, plan: _Plan, path: str, out: list[Violation], root: bool) -> None:
    props = plan.schema.get("properties") if isinstance(plan.schema.get("properties"), dict) else {}
    old_map = old if isinstance(old, dict) else {}
    for key, sub_value in value.items():
        if root and key == "metadata":
            continue  # ObjectMeta is the apiserver's, not the CRD's
        if key in props:
            sub, sub_path = plan.props.get(key), _child(path, key)
        else:
            sub, sub_path = plan.extra, f"{path}[{key}]"
        if sub is not None:
            _walk(sub_value, old_map.get(key, NO_OLD), sub, sub_path, out)


def _map_list_olds(old: Any, schema: dict):
    """item -> its old item: only map lists correlate (by their keys); other items have none."""
    keys = schema.get("x-kubernetes-list-map-keys") or []
    if schema.get("x-kubernetes-list-type") != "map" or not keys or not isinstance(old, list):
        return lambda item: NO_OLD
    by_key = {_map_key(item, keys): item for item in old if isinstance(item, dict)}
    return lambda item: by_key.get(_map_key(item, keys), NO_OLD) if isinstance(item, dict) else NO_OLD


def _map_key(item: dict, keys: list[str]) -> str:
    return json.dumps([item.get(k) for k in keys])


def _rule_view(obj: Any) -> Any:
    """At a resource's root, rules see apiVersion, kind and only metadata.name/generateName."""
    if not isinstance(obj, dict) or "metadata" not in obj:
        return obj
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return obj
    return dict(obj, metadata={k: meta[k] for k in ("name", "generateName") if k in meta})


def _check(value: Any, old: Any, schema: dict, path: str) -> Iterator[Violation]:
    kind = _type_name(schema)
    for rule in schema.get("x-kubernetes-validations") or []:
        text = rule.get("rule", "")
        try:
            compiled = cel.compile_rule(text)
        except cel.Unsupported:
            continue  # listed by unsupported_rules(); never guessed
        try:
            if compiled(value, old):
                continue
        except cel.EvalError as e:
            yield Violation(path, f'Invalid value: "{kind}": {e} evaluating rule: {_error_string(rule)}')
            continue
        where = _with_field_path(path, rule.get("fieldPath") or "")
        yield Violation(where, _failure(rule, kind, _message(rule, value, old)))


def _type_name(schema: dict) -> str:
    kind = schema.get("type")
    if isinstance(kind, str) and kind:
        return kind
    return "object" if "properties" in schema else ""


def _error_string(rule: dict) -> str:
    return (rule.get("message") or "").strip() or rule.get("rule", "").strip()


def _default_message(rule: dict) -> str:
    message = (rule.get("message") or "").strip()
    return message or f"failed rule: {rule.get('rule', '').strip()}"


def _message(rule: dict, value: Any, old: Any) -> str:
    """messageExpression's string when it evaluates to a one-line, non-empty string; else message."""
    expression = rule.get("messageExpression")
    if not expression:
        return _default_message(rule)
    try:
        text = cel.compile_rule(expression).evaluate(value, old)
    except (cel.Unsupported, cel.EvalError):
        return _default_message(rule)
    if not isinstance(text, str) or not text.strip() or "\n" in text.strip():
        return _default_message(rule)
    return text.strip()


def _failure(rule: dict, kind: str, message: str) -> str:
    reason = rule.get("reason") or "FieldValueInvalid"
    if reason == "FieldValueForbidden":
        return f"Forbidden: {message}"
    if reason == "FieldValueRequired":
        return f"Required value: {message}"
    if reason == "FieldValueDuplicate":
        return f'Duplicate value: "{kind}"'
    return f'Invalid value: "{kind}": {message}'


def _with_field_path(path: str, field_path: str) -> str:
    """`.spec.x['a.b'][0]` relative to the rule's node, in kubectl's path style."""
    pos = 0
    while pos < len(field_path):
        m = _FIELD_PATH_PART.match(field_path, pos)
        if not m:
            return path  # the apiserver refuses such a CRD; keep the node's own path
        name, key, index = m.groups()
        path = _child(path, name) if name else f"{path}[{key if key is not None else index}]"
        pos = m.end()
    return path
