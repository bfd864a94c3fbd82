"""Custom resources against their CRD's structural schema, in the apiserver's order: prune
unknown fields, apply `default`s, validate (promop.schema does the validation, shared with the
renderer's CRD check).

`fieldValidation` decides what pruning means for the client: `Ignore` drops silently, `Warn`
(the default) drops and answers a `Warning: 299` header per field, `Strict` refuses with 400."""

from __future__ import annotations

import copy
from typing import Any

from promop.sandbox.errors import ApiError, invalid
from promop.schema import validate

FIELD_VALIDATION = ("Ignore", "Warn", "Strict")
ROOT_KEPT = ("apiVersion", "kind", "metadata")


def _path(parts: tuple) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def prune(obj: Any, schema: Any, parts: tuple = ()) -> list[str]:
    """Remove, in place, the fields `schema` does not declare; returns their paths."""
    pruned: list[str] = []
    if not isinstance(schema, dict):
        return pruned
    if isinstance(obj, dict):
        props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
        extra = schema.get("additionalProperties")
        preserve = schema.get("x-kubernetes-preserve-unknown-fields") or extra is True
        embedded = schema.get("x-kubernetes-embedded-resource")
        for key in list(obj):
            if not parts and key in ROOT_KEPT:
                if key != "metadata" and key in props:
                    pruned += prune(obj[key], props[key], (key,))
                continue
            if key in props:
                pruned += prune(obj[key], props[key], parts + (key,))
            elif isinstance(extra, dict):
                pruned += prune(obj[key], extra, parts + (key,))
            elif preserve or (embedded and key in ROOT_KEPT):
                continue
            else:
                del obj[key]
                pruned.append(_path(parts + (key,)))
    elif isinstance(obj, list) and isinstance(schema.get("items"), dict):
        for n, item in enumerate(obj):
            pruned += prune(item, schema["items"], parts + (n,))
    return pruned


def default(obj: Any, schema: Any, root: bool = True) -> None:
    """Set, in place, every missing property that has a `default` (nested objects included);
    a null where the schema does not allow null counts as missing."""
    if not isinstance(schema, dict):
        return
    if isinstance(obj, dict):
        props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
        for key, sub in props.items():
            if root and key == "metadata" or not isinstance(sub, dict):
                continue
            if key in obj and obj[key] is None and not sub.get("nullable"):
                del obj[key]
            if key not in obj and "default" in sub:
                obj[key] = copy.deepcopy(sub["default"])
            if key in obj:
                default(obj[key], sub, False)
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for key, value in obj.items():
                if key not in props:
                    default(value, extra, False)
    elif isinstance(obj, list) and isinstance(schema.get("items"), dict):
        for item in obj:
            default(item, schema["items"], False)


def admit(kind: str, group: str, obj: dict, schema: dict | None, field_validation: str,
          warnings: list[str]) -> None:
    """Prune, default and validate `obj` (a custom resource) in place; 400 for unknown fields
    under Strict, 422 with the schema's violations, warnings appended under Warn."""
    if not schema:
        return
    pruned = prune(obj, schema)
    if pruned:
        if field_validation == "Strict":
            listed = ", ".join(f'unknown field "{p}"' for p in pruned)
            raise ApiError(400, f'{kind} in version "{obj.get("apiVersion", "").rpartition("/")[2]}'
                                f'" cannot be handled as a {kind}: strict decoding error: '
                                f"{listed}")
        if field_validation != "Ignore":
            warnings += [f'unknown field "{p}"' for p in pruned]
    default(obj, schema)
    meta = obj.get("metadata") or {}
    checked = dict(obj, metadata={k: meta[k] for k in ("name", "generateName") if k in meta})
    violations = validate(checked, schema)
    if violations:
        raise invalid(kind, group, meta.get("name", ""),
                      [(v.path, v.message) for v in violations])
