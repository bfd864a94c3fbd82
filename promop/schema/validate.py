"""Validate an object against a CRD version's `openAPIV3Schema`, as the apiserver would.

A compiled check (promop.schema.compiled) says whether an object is valid; for one that is not,
`jsonschema` (promop.schema.jsonschema_check; Draft 4 keywords: OpenAPI 3.0's schema objects are
Draft 4 with extensions) finds every violation. Both follow Kubernetes' rules:

- `nullable`: null is allowed where `nullable: true`. Elsewhere, a null *object field* counts
  as absent (the apiserver prunes it before validating), so it only matters for `required`.
- `x-kubernetes-int-or-string`: an integer or a string.
- `x-kubernetes-preserve-unknown-fields`: nothing to check; unknown fields are never an
  error here (the apiserver prunes them); `unknown_fields()` lists them for warnings.
- `x-kubernetes-embedded-resource`: `apiVersion` and `kind` required, `metadata` an object.
- `format`: `int32`, `int64` (ranges), `date-time`, `date`, `byte`, `uuid`, `ipv4`, `ipv6`,
  `cidr`, `hostname`, `uri`; other formats are not checked.
- `pattern`: Go regexp semantics (promop.goregex, RE2).
- `x-kubernetes-list-type: set` (items unique) and `map` (unique by `x-kubernetes-list-map-keys`).
- `x-kubernetes-validations`: CEL rules, evaluated by promop.schema.rules (with `oldSelf` when
  the caller passes the old object); a rule promop cannot evaluate is skipped and listed by
  `promop.schema.rules.unsupported_rules`.

Messages follow the apiserver's (`Invalid value: "x": should match '...'`, `Required
value`, `Unsupported value: ...`, `Duplicate value: ...`) and paths are kubectl's
(`spec.endpoints[0].proxyUrl`, `metadata.labels[app]`).
"""

from __future__ import annotations

from typing import Any

from promop.schema.cel import NO_OLD
from promop.schema.compiled import compile_schema
from promop.schema.messages import Violation
from promop.schema.per_schema import PerSchema
from promop.schema.rules import rule_violations
from promop.schema.walk import unknown_fields

__all__ = ["Violation", "unknown_fields", "validate"]

# the compiled "is it valid" check, built once per schema
_check_for = PerSchema(compile_schema)


def validate(obj: Any, schema: dict, old: Any = NO_OLD) -> list[Violation]:
    """Every violation of `schema` (a CRD version's `openAPIV3Schema`) by `obj`: the schema's
    in path order, then its CEL rules' (transition rules only when `old`, the stored object of
    an update, is given).

    An empty list means the apiserver's schema validation would accept the object. Valid
    objects are recognised by the compiled check (promop.schema.compiled); jsonschema
    (promop.schema.jsonschema_check, imported then) runs only for the others, to find every
    violation with its path and message.
    """
    fast = _check_for(schema)
    if fast is not None and fast(obj):
        found: list[Violation] = []
    else:
        from promop.schema.jsonschema_check import violations

        found = violations(obj, schema)
    return found + [v for v in rule_violations(obj, schema, old) if v not in found]
