"""Validate an object against a CRD version's `openAPIV3Schema`, as the apiserver would.

Built on `jsonschema` (Draft 4 keywords: OpenAPI 3.0's schema objects are Draft 4 with
extensions), extended with Kubernetes' rules:

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
- `x-kubernetes-validations`: rules in the CEL subset of promop.schema.cel (every rule in
  upstream's monitoring.coreos.com CRDs); other rules are skipped.

Messages follow the apiserver's (`Invalid value: "x": should match '...'`, `Required
value`, `Unsupported value: ...`, `Duplicate value: ...`) and paths are kubectl's
(`spec.endpoints[0].proxyUrl`, `metadata.labels[app]`).
"""

from __future__ import annotations

import base64
import datetime
import ipaddress
import json
import re
import uuid
from dataclasses import dataclass
from typing import Any, Iterator

from jsonschema import ValidationError, validators
from jsonschema.validators import Draft4Validator

from promop.goregex import go_pattern
from promop.schema import cel

_BASE = Draft4Validator.VALIDATORS


@dataclass(frozen=True)
class Violation:
    """One reason the apiserver would refuse the object."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


def _show(value: Any) -> str:
    """A value as the apiserver quotes it (JSON; objects and lists as their type)."""
    if isinstance(value, dict):
        return '"object"'
    if isinstance(value, list):
        return '"array"'
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 120 else text[:117] + '..."'


def _nullable(schema: Any) -> bool:
    return isinstance(schema, dict) and bool(schema.get("nullable"))


# -- keywords -----------------------------------------------------------------------------

def _type(validator, types, instance, schema):
    if instance is None and schema.get("nullable"):
        return
    if schema.get("x-kubernetes-int-or-string"):
        return  # checked by x-kubernetes-int-or-string
    yield from _BASE["type"](validator, types, instance, schema)


def _enum(validator, enums, instance, schema):
    if instance is None and schema.get("nullable"):
        return
    if instance not in enums or (isinstance(instance, bool) and not any(e is instance for e in enums)):
        shown = ", ".join(_show(e) for e in enums)
        yield ValidationError(f"Unsupported value: {_show(instance)}: supported values: {shown}")


def _properties(validator, properties, instance, schema):
    if not validator.is_type(instance, "object"):
        return
    for name, sub in properties.items():
        if name in instance:
            value = instance[name]
            if value is None and not _nullable(sub):
                continue  # pruned by the apiserver before validation
            yield from validator.descend(value, sub, path=name, schema_path=name)


def _required(validator, required, instance, schema):
    if not validator.is_type(instance, "object"):
        return
    props = schema.get("properties", {})
    for name in required:
        if name not in instance or (instance[name] is None and not _nullable(props.get(name))):
            yield ValidationError("Required value", path=[name])


def _int_or_string(validator, on, instance, schema):
    if not on or instance is None and schema.get("nullable"):
        return
    if isinstance(instance, bool) or not isinstance(instance, (int, str)):
        if not (isinstance(instance, float) and instance.is_integer()):
            yield ValidationError(f"Invalid value: {_show(instance)}: must be of type integer or string")


def _any_of(validator, any_of, instance, schema):
    if schema.get("x-kubernetes-int-or-string"):
        return  # the usual `anyOf: [integer, string]`: reported once by x-kubernetes-int-or-string
    yield from _BASE["anyOf"](validator, any_of, instance, schema)


def _pattern(validator, pattern, instance, schema):
    if not isinstance(instance, str):
        return
    rx = go_pattern(pattern)
    if rx is not None and not rx.search(instance):
        yield ValidationError(f"Invalid value: {_show(instance)}: should match '{pattern}'")


_RFC3339 = re.compile(
    r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$", re.ASCII
)
_HOSTNAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$", re.ASCII)
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:[^\s]*$", re.ASCII)


def _check_format(fmt: str, value: Any) -> bool:
    if fmt in ("int32", "int64"):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return True
        bits = 31 if fmt == "int32" else 63
        return -(2 ** bits) <= value < 2 ** bits
    if not isinstance(value, str):
        return True
    try:
        if fmt in ("date-time", "datetime"):
            if not _RFC3339.match(value):
                return False
            datetime.datetime.fromisoformat(value.replace("z", "Z").replace("t", "T"))
        elif fmt == "date":
            datetime.date.fromisoformat(value)
        elif fmt == "byte":
            base64.b64decode(value, validate=True)
        elif fmt == "uuid":
            uuid.UUID(value)
        elif fmt == "ipv4":
            ipaddress.IPv4Address(value)
        elif fmt == "ipv6":
            ipaddress.IPv6Address(value)
        elif fmt == "cidr":
            ipaddress.ip_network(value, strict=False)
        elif fmt == "hostname":
            return len(value) <= 253 and bool(_HOSTNAME.match(value))
        elif fmt == "uri":
            return bool(_URI.match(value))
    except ValueError:
        return False
    return True


def _format(validator, fmt, instance, schema):
    if not _check_format(fmt, instance):
        if fmt in ("int32", "int64"):
            yield ValidationError(f"Invalid value: {_show(instance)}: must fit in {fmt}")
        else:
            yield ValidationError(f"Invalid value: {_show(instance)}: must be of format {fmt}")


def _list_type(validator, list_type, instance, schema):
    if not isinstance(instance, list) or list_type not in ("set", "map"):
        return
    seen: dict[str, int] = {}
    keys = schema.get("x-kubernetes-list-map-keys") or []
    item_schema = schema.get("items") or {}
    item_props = item_schema.get("properties", {}) if isinstance(item_schema, dict) else {}
    for i, item in enumerate(instance):
        if list_type == "set":
            ident = json.dumps(item, sort_keys=True)
            shown = _show(item)
        else:
            if not isinstance(item, dict):
                continue
            key = {}
            for k in keys:
                v = item.get(k, _default(item_props.get(k)))
                key[k] = v
            ident = json.dumps(key, sort_keys=True)
            shown = json.dumps(key, ensure_ascii=False, separators=(",", ":"))
        if ident in seen:
            yield ValidationError(f"Duplicate value: {shown}", path=[i])
        else:
            seen[ident] = i


def _default(prop_schema: Any) -> Any:
    return prop_schema.get("default") if isinstance(prop_schema, dict) else None


def _embedded(validator, on, instance, schema):
    if not on or not isinstance(instance, dict):
        return
    for field in ("apiVersion", "kind"):
        value = instance.get(field)
        if not isinstance(value, str) or not value:
            yield ValidationError("Required value: must not be empty", path=[field])
    if "metadata" in instance and not isinstance(instance["metadata"], dict):
        yield ValidationError(
            f"Invalid value: {_show(instance['metadata'])}: must be of type object", path=["metadata"]
        )


def _validations(validator, rules, instance, schema):
    if instance is None:
        return
    for rule in rules or []:
        text = rule.get("rule", "")
        try:
            check = cel.compile_rule(text)
        except cel.Unsupported:
            continue  # outside the subset: skipped, never guessed
        try:
            ok = check(instance)
            detail = rule.get("message") or f"failed rule: {text}"
        except cel.EvalError as e:
            ok, detail = False, f"failed rule: {text}: {e}"
        if not ok:
            path = _field_path_parts(rule.get("fieldPath", ""))
            yield ValidationError(f"Invalid value: {_show(instance)}: {detail}", path=path)


def _field_path_parts(field_path: str) -> list[str]:
    return [p for p in field_path.split(".") if p] if field_path else []


_KEYWORDS = {
    "type": _type,
    "enum": _enum,
    "properties": _properties,
    "required": _required,
    "anyOf": _any_of,
    "pattern": _pattern,
    "format": _format,
    "x-kubernetes-int-or-string": _int_or_string,
    "x-kubernetes-list-type": _list_type,
    "x-kubernetes-embedded-resource": _embedded,
    "x-kubernetes-validations": _validations,
}


def _is_integer(checker, instance) -> bool:
    if isinstance(instance, bool):
        return False
    return isinstance(instance, int) or (isinstance(instance, float) and instance.is_integer())


_K8sValidator = validators.extend(
    Draft4Validator,
    validators=_KEYWORDS,
    type_checker=Draft4Validator.TYPE_CHECKER.redefine("integer", _is_integer),
)

# -- messages and paths -------------------------------------------------------------------

_BOUND_MESSAGES = {
    "minimum": "should be greater than or equal to {v}",
    "maximum": "should be less than or equal to {v}",
    "minLength": "should be at least {v} chars long",
    "maxLength": "should be at most {v} chars long",
    "minItems": "should have at least {v} items",
    "maxItems": "should have at most {v} items",
    "minProperties": "should have at least {v} properties",
    "maxProperties": "should have at most {v} properties",
    "multipleOf": "should be a multiple of {v}",
}


def _message(error: ValidationError) -> str:
    kw = error.validator
    inst = error.instance
    if kw == "type":
        want = error.validator_value
        want = " or ".join(want) if isinstance(want, list) else want
        return f"Invalid value: {_show(inst)}: must be of type {want}"
    if kw == "anyOf":
        return f"Invalid value: {_show(inst)}: must match at least one of the allowed schemas (anyOf)"
    if kw in _KEYWORDS:
        return error.message
    if kw in ("minimum", "maximum"):
        v = error.validator_value
        strict = error.schema.get("exclusiveMinimum" if kw == "minimum" else "exclusiveMaximum")
        if strict:
            word = "greater than" if kw == "minimum" else "less than"
            return f"Invalid value: {_show(inst)}: should be {word} {v}"
        return f"Invalid value: {_show(inst)}: " + _BOUND_MESSAGES[kw].format(v=v)
    if kw in _BOUND_MESSAGES:
        return f"Invalid value: {_show(inst)}: " + _BOUND_MESSAGES[kw].format(v=error.validator_value)
    if kw == "uniqueItems":
        return f"Invalid value: {_show(inst)}: items must be unique"
    return f"Invalid value: {_show(inst)}: {error.message}"


def _format_path(parts: list[Any], schema: dict) -> str:
    """kubectl's field path: `.name` for properties, `[i]` for items, `[key]` for map keys."""
    out: list[str] = []
    sub: Any = schema
    for part in parts:
        if isinstance(part, int):
            out.append(f"[{part}]")
            sub = sub.get("items") if isinstance(sub, dict) else None
            continue
        props = sub.get("properties") if isinstance(sub, dict) else None
        if isinstance(props, dict) and part in props:
            out.append(f".{part}" if out else part)
            sub = props[part]
        elif isinstance(sub, dict) and isinstance(sub.get("additionalProperties"), dict):
            out.append(f"[{part}]")
            sub = sub["additionalProperties"]
        else:
            out.append(f".{part}" if out else part)
            sub = None
    return "".join(out)


def _sort_key(error: ValidationError) -> tuple:
    return tuple((0, p) if isinstance(p, int) else (1, str(p)) for p in error.absolute_path)


# -- public -------------------------------------------------------------------------------

# Per schema (by identity; the entry keeps the schema alive so the id stays its own): the
# jsonschema validator and the compiled "is it valid" check, both built once.
_validators: dict[int, tuple[dict, Any, Any]] = {}


def _validators_for(schema: dict) -> tuple[Any, Any]:
    hit = _validators.get(id(schema))
    if hit is not None and hit[0] is schema:
        return hit[1], hit[2]
    from promop.schema.compiled import compile_schema

    v = _K8sValidator(schema)
    fast = compile_schema(schema)
    if len(_validators) > 64:
        _validators.clear()
    _validators[id(schema)] = (schema, v, fast)
    return v, fast


def validate(obj: Any, schema: dict) -> list[Violation]:
    """Every violation of `schema` (a CRD version's `openAPIV3Schema`) by `obj`, in path order.

    An empty list means the apiserver's schema validation would accept the object. Valid
    objects are recognised by the compiled check (promop.schema.compiled); jsonschema runs
    only for the others, to find every violation with its path and message.
    """
    validator, fast = _validators_for(schema)
    if fast is not None and fast(obj):
        return []
    return _slow_validate(validator, obj, schema)


def _slow_validate(validator: Any, obj: Any, schema: dict) -> list[Violation]:
    errors = sorted(validator.iter_errors(obj), key=_sort_key)
    out: list[Violation] = []
    seen: set[Violation] = set()
    for error in errors:
        v = Violation(_format_path(list(error.absolute_path), schema), _message(error))
        if v not in seen:
            seen.add(v)
            out.append(v)
    return out


def _iter_unknown(obj: Any, schema: Any, path: tuple) -> Iterator[list[Any]]:
    if not isinstance(schema, dict):
        return
    if isinstance(obj, dict):
        props = schema.get("properties")
        addl = schema.get("additionalProperties")
        preserve = schema.get("x-kubernetes-preserve-unknown-fields") or addl is True
        embedded = schema.get("x-kubernetes-embedded-resource")
        for key, value in obj.items():
            if isinstance(props, dict) and key in props:
                if not path and key == "metadata":
                    continue  # ObjectMeta: the apiserver's own schema, not the CRD's
                yield from _iter_unknown(value, props[key], path + (key,))
            elif isinstance(addl, dict):
                yield from _iter_unknown(value, addl, path + (key,))
            elif preserve or (embedded and key in ("apiVersion", "kind", "metadata")):
                continue
            else:
                yield list(path + (key,))
    elif isinstance(obj, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(obj):
            yield from _iter_unknown(item, schema["items"], path + (i,))


def unknown_fields(obj: Any, schema: dict) -> list[str]:
    """Paths of fields the schema does not know (the apiserver drops them; kubectl's strict
    field validation refuses them). For warnings: they are not violations."""
    return [_format_path(p, schema) for p in _iter_unknown(obj, schema, ())]
