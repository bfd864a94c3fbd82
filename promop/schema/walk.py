"""The structural-schema walk the apiserver does before validating a custom resource: unknown
fields (reported, and pruned), then `default`s. One walk, used by the sandbox (which prunes and
defaults what it stores) and by offline validation (which only reports unknown fields).

    unknown_fields(obj, schema) -> list[str]         paths, obj untouched
    prune(obj, schema) -> list[str]                  removes them in place, returns their paths
    apply_defaults(obj, schema) -> None              sets defaults in place

What is unknown, as the apiserver's structural pruning decides: a field that is not in
`properties`, where `additionalProperties` is not a schema (a schema's map values are walked), and
`x-kubernetes-preserve-unknown-fields` (or `additionalProperties: true`) is not set; at the root and
in an `x-kubernetes-embedded-resource`, `apiVersion`, `kind` and `metadata` are always known
(ObjectMeta is the apiserver's own schema). Paths are the apiserver's (`spec.foo`, `spec.items[0].x`,
`spec.labels[key].x`), as in `unknown field "spec.foo"`.

Defaults, as structural defaulting does: a missing property with a `default` gets a copy of it, in
objects at any depth, in array items and in `additionalProperties` values; a null where the schema
is not `nullable` counts as missing (it is dropped, then defaulted if it has a default).
"""

from __future__ import annotations

import copy
from typing import Any

_ENVELOPE = ("apiVersion", "kind", "metadata")


def _child(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _unknown(obj: Any, schema: Any, path: str, remove: bool, root: bool) -> list[str]:
    if not isinstance(schema, dict):
        return []
    if isinstance(obj, list):
        items = schema.get("items")
        if not isinstance(items, dict):
            return []
        return [p for n, item in enumerate(obj) for p in _unknown(item, items, f"{path}[{n}]", remove, False)]
    if not isinstance(obj, dict):
        return []
    props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    extra = schema.get("additionalProperties")
    keep_all = schema.get("x-kubernetes-preserve-unknown-fields") or extra is True
    envelope = root or schema.get("x-kubernetes-embedded-resource")
    found: list[str] = []
    for key in list(obj):
        if envelope and key in _ENVELOPE:
            if key != "metadata" and key in props:
                found += _unknown(obj[key], props[key], _child(path, key), remove, False)
        elif key in props:
            found += _unknown(obj[key], props[key], _child(path, key), remove, False)
        elif isinstance(extra, dict):
            found += _unknown(obj[key], extra, f"{path}[{key}]", remove, False)
        elif not keep_all:
            found.append(_child(path, key))
            if remove:
                del obj[key]
    return found


def unknown_fields(obj: Any, schema: dict) -> list[str]:
    """Paths of the fields the apiserver would prune from `obj` (kubectl's strict field validation
    refuses them, the default `Warn` warns about them); `obj` is not changed."""
    return _unknown(obj, schema, "", False, True)


def prune(obj: Any, schema: dict) -> list[str]:
    """Remove, in place, the fields `schema` does not know; returns their paths."""
    return _unknown(obj, schema, "", True, True)


def apply_defaults(obj: Any, schema: Any, root: bool = True) -> None:
    """Set, in place, every missing property that has a `default`, at any depth."""
    if not isinstance(schema, dict):
        return
    if isinstance(obj, list):
        items = schema.get("items")
        for item in obj:
            apply_defaults(item, items, False)
        return
    if not isinstance(obj, dict):
        return
    props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    for key, sub in props.items():
        if (root and key == "metadata") or not isinstance(sub, dict):
            continue
        if key in obj and obj[key] is None and not sub.get("nullable"):
            del obj[key]
        if key not in obj and "default" in sub:
            obj[key] = copy.deepcopy(sub["default"])
        if key in obj:
            apply_defaults(obj[key], sub, False)
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        for key, value in obj.items():
            if key not in props:
                apply_defaults(value, extra, False)
