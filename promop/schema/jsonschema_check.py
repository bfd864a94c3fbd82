"""Every violation of a schema, with its path and message: jsonschema's Draft 4 validator extended
with Kubernetes' keywords (promop.schema.validate lists them).

Why a module of its own: only an object the compiled check (promop.schema.compiled) finds invalid
comes here, and importing jsonschema (with referencing, attrs, rpds) costs ~90 ms at start-up,
on the operator's first sync, where every object is usually valid.
"""

from __future__ import annotations

from typing import Any

from jsonschema import ValidationError, validators
from jsonschema.validators import Draft4Validator

from promop.goregex import go_pattern
from promop.schema.keywords import check_format, embedded, list_type
from promop.schema.messages import Violation, format_path, show
from promop.schema.per_schema import PerSchema

_BASE = Draft4Validator.VALIDATORS


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
        shown = ", ".join(show(e) for e in enums)
        yield ValidationError(f"Unsupported value: {show(instance)}: supported values: {shown}")


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
            yield ValidationError(f"Invalid value: {show(instance)}: must be of type integer or string")


def _any_of(validator, any_of, instance, schema):
    if schema.get("x-kubernetes-int-or-string"):
        return  # the usual `anyOf: [integer, string]`: reported once by x-kubernetes-int-or-string
    yield from _BASE["anyOf"](validator, any_of, instance, schema)


def _pattern(validator, pattern, instance, schema):
    if not isinstance(instance, str):
        return
    rx = go_pattern(pattern)
    if rx is not None and not rx.search(instance):
        yield ValidationError(f"Invalid value: {show(instance)}: should match '{pattern}'")


def _format(validator, fmt, instance, schema):
    if not check_format(fmt, instance):
        if fmt in ("int32", "int64"):
            yield ValidationError(f"Invalid value: {show(instance)}: must fit in {fmt}")
        else:
            yield ValidationError(f"Invalid value: {show(instance)}: must be of format {fmt}")


_KEYWORDS = {
    "type": _type,
    "enum": _enum,
    "properties": _properties,
    "required": _required,
    "anyOf": _any_of,
    "pattern": _pattern,
    "format": _format,
    "x-kubernetes-int-or-string": _int_or_string,
    "x-kubernetes-list-type": list_type,
    "x-kubernetes-embedded-resource": embedded,
}


def _is_integer(checker, instance) -> bool:
    if isinstance(instance, bool):
        return False
    return isinstance(instance, int) or (isinstance(instance, float) and instance.is_integer())


# jsonschema's Draft 4 validator with the Kubernetes keywords above (for messages and paths).
K8sValidator = validators.extend(
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
        return f"Invalid value: {show(inst)}: must be of type {want}"
    if kw == "anyOf":
        return f"Invalid value: {show(inst)}: must match at least one of the allowed schemas (anyOf)"
    if kw in _KEYWORDS:
        return error.message
    if kw in ("minimum", "maximum"):
        v = error.validator_value
        strict = error.schema.get("exclusiveMinimum" if kw == "minimum" else "exclusiveMaximum")
        if strict:
            word = "greater than" if kw == "minimum" else "less than"
            return f"Invalid value: {show(inst)}: should be {word} {v}"
        return f"Invalid value: {show(inst)}: " + _BOUND_MESSAGES[kw].format(v=v)
    if kw in _BOUND_MESSAGES:
        return f"Invalid value: {show(inst)}: " + _BOUND_MESSAGES[kw].format(v=error.validator_value)
    if kw == "uniqueItems":
        return f"Invalid value: {show(inst)}: items must be unique"
    return f"Invalid value: {show(inst)}: {error.message}"


def _sort_key(error: ValidationError) -> tuple:
    return tuple((0, p) if isinstance(p, int) else (1, str(p)) for p in error.absolute_path)


_validator_for = PerSchema(K8sValidator)  # built once per schema


def violations(obj: Any, schema: dict) -> list[Violation]:
    """The schema's violations by `obj` in path order, each once."""
    errors = sorted(_validator_for(schema).iter_errors(obj), key=_sort_key)
    out: list[Violation] = []
    seen: set[Violation] = set()
    for error in errors:
        v = Violation(format_path(list(error.absolute_path), schema), _message(error))
        if v not in seen:
            seen.add(v)
            out.append(v)
    return out
