"""Custom resources against their CRD's structural schema, in the apiserver's order: prune
unknown fields, apply `default`s, validate. The walk (promop.schema.walk) and the validation
(promop.schema.validate, CEL rules included) are the pure cores shared with offline validation.

`fieldValidation` decides what pruning means for the client: `Ignore` drops silently, `Warn`
(the default) drops and answers a `Warning: 299` header per field, `Strict` refuses with 400."""

from __future__ import annotations

from typing import Any

from promop.sandbox.errors import ApiError, invalid
from promop.schema import validate
from promop.schema.cel import NO_OLD
from promop.schema.walk import apply_defaults, prune

FIELD_VALIDATION = ("Ignore", "Warn", "Strict")
__all__ = ["FIELD_VALIDATION", "admit", "apply_defaults", "default", "prune"]

# the names the sandbox's tests have used for the walk's two halves
default = apply_defaults


def admit(kind: str, group: str, obj: dict, schema: dict | None, field_validation: str,
          warnings: list[str], old: dict | None = None) -> None:
    """Prune, default and validate `obj` (a custom resource) in place; 400 for unknown fields
    under Strict, 422 with the schema's violations, warnings appended under Warn. `old`, the
    stored object on update, is what CEL transition rules (`oldSelf`) compare with."""
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
    apply_defaults(obj, schema)
    meta = obj.get("metadata") or {}
    violations = validate(_for_validation(obj), schema,
                          NO_OLD if old is None else _for_validation(old))
    if violations:
        raise invalid(kind, group, meta.get("name", ""),
                      [(v.path, v.message) for v in violations])


def _for_validation(obj: dict) -> dict[str, Any]:
    """The CRD schema sees metadata.name and generateName only (ObjectMeta is checked elsewhere)."""
    meta = obj.get("metadata") or {}
    return dict(obj, metadata={k: meta[k] for k in ("name", "generateName") if k in meta})
