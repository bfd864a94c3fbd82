"""A schema compiled once into plain Python checks that only answer "valid or not".

Why: jsonschema builds a validator object per (instance, subschema) pair as it descends,
which made CRD validation a third of a full render. Nearly every object is valid, so
`validate()` asks this checker first and runs jsonschema (for the messages and paths)
only when the answer is not a plain "valid".

The checker is conservative by construction:
- `compile_schema()` returns None when the schema uses a keyword outside the subset
  below, and then jsonschema alone is used;
- a check answers False whenever in doubt (an unusual Python type, any exception), and
  False only means "ask jsonschema", so a wrong False costs time, never correctness.

Supported (the keywords promop's CRDs use, with promop.schema.validate's Kubernetes
semantics): type, nullable, enum, properties (a null field counts as absent unless
nullable), required, additionalProperties (schema or bool), items (one schema), anyOf,
allOf, pattern (Go syntax), format, minimum/maximum (with Draft 4's exclusive flags),
minLength/maxLength, minItems/maxItems, x-kubernetes-int-or-string,
x-kubernetes-list-type, x-kubernetes-embedded-resource. `x-kubernetes-validations` (CEL) are
not schema keywords here: promop.schema.rules evaluates them for every object, valid or not.
tests/schema/test_compiled.py checks the verdicts equal jsonschema's.
"""

from __future__ import annotations

import numbers
from typing import Any, Callable

from promop.goregex import go_pattern
from promop.schema.keywords import check_format, embedded, list_type

Check = Callable[[Any], bool]

# Draft 4 keywords (and the Kubernetes extensions) this module does not compile.
_UNSUPPORTED = frozenset({
    "$ref", "additionalItems", "dependencies", "maxProperties", "minProperties", "multipleOf", "not",
    "oneOf", "patternProperties", "uniqueItems",
})


class _NotCompiled(Exception):
    """The schema is outside the compiled subset."""


def _is_number(x: Any) -> bool:
    t = type(x)
    if t is int or t is float:
        return True
    return not isinstance(x, bool) and isinstance(x, numbers.Number)


def _is_integer(x: Any) -> bool:
    t = type(x)
    if t is int:
        return True
    if isinstance(x, bool):
        return False
    return isinstance(x, int) or (isinstance(x, float) and x.is_integer())


_TYPE_CHECKS: dict[str, Check] = {
    "string": lambda x: isinstance(x, str),
    "object": lambda x: isinstance(x, dict),
    "array": lambda x: isinstance(x, list),
    "boolean": lambda x: isinstance(x, bool),
    "integer": _is_integer,
    "number": _is_number,
    "null": lambda x: x is None,
}


def _all(checks: list[Check]) -> Check:
    if not checks:
        return lambda x: True
    if len(checks) == 1:
        return checks[0]
    if len(checks) == 2:
        a, b = checks
        return lambda x: a(x) and b(x)
    return lambda x: all(c(x) for c in checks)


def _type_check(schema: dict) -> Check | None:
    types = schema["type"]
    names = [types] if isinstance(types, str) else list(types) if isinstance(types, list) else None
    if names is None or any(n not in _TYPE_CHECKS for n in names):
        raise _NotCompiled(f"type {types!r}")
    if len(names) == 1:
        name = names[0]
        if name == "string":
            return lambda x: type(x) is str or isinstance(x, str)
        if name == "object":
            return lambda x: type(x) is dict or isinstance(x, dict)
        if name == "boolean":
            return lambda x: x is True or x is False
        return _TYPE_CHECKS[name]
    fns = [_TYPE_CHECKS[n] for n in names]
    return lambda x: any(f(x) for f in fns)


def _enum_check(enums: Any) -> Check:
    if not isinstance(enums, list):
        raise _NotCompiled("enum")
    members = list(enums)

    def check(x: Any) -> bool:
        if x not in members:
            return False
        return not isinstance(x, bool) or any(e is x for e in members)

    return check


def _object_check(schema: dict, memo: dict[int, Check]) -> Check | None:
    """properties, additionalProperties and required together, in one pass over the object."""
    props = schema.get("properties")
    if props is not None and not isinstance(props, dict):
        raise _NotCompiled("properties")
    has_props = "properties" in schema
    addl = schema.get("additionalProperties", True) if "additionalProperties" in schema else None
    required = schema.get("required")
    if not has_props and addl is None and required is None:
        return None
    props = props or {}
    subs = {name: _compile(sub, memo) for name, sub in props.items()}
    nullable = {name for name, sub in props.items() if isinstance(sub, dict) and sub.get("nullable")}
    if isinstance(addl, dict):
        extra_check: Check | None = _compile(addl, memo)
        extras_allowed = True
    elif addl is None or addl is True:
        extra_check, extras_allowed = None, True
    elif addl is False:
        extra_check, extras_allowed = None, False
    else:
        raise _NotCompiled("additionalProperties")
    if required is not None and not isinstance(required, list):
        raise _NotCompiled("required")
    req = list(required or [])

    def check(x: Any) -> bool:
        if type(x) is not dict and not isinstance(x, dict):
            return True
        get = subs.get
        for name, value in x.items():
            sub = get(name)
            if sub is None:
                if name in subs:
                    continue
                if extra_check is not None:
                    if not extra_check(value):
                        return False
                elif not extras_allowed:
                    return False
                continue
            if value is None and name not in nullable:
                continue  # pruned by the apiserver
            if not sub(value):
                return False
        for name in req:
            if name not in x or (x[name] is None and name not in nullable):
                return False
        return True

    return check


def _items_check(items: Any, memo: dict[int, Check]) -> Check:
    if not isinstance(items, dict):
        raise _NotCompiled("items as a list")
    sub = _compile(items, memo)

    def check(x: Any) -> bool:
        if type(x) is not list and not isinstance(x, list):
            return True
        for item in x:
            if not sub(item):
                return False
        return True

    return check


def _generator_check(keyword_fn: Callable, value: Any, schema: dict) -> Check:
    """A keyword of promop.schema.keywords that yields errors: valid when it yields none."""
    def check(x: Any) -> bool:
        for _ in keyword_fn(None, value, x, schema):
            return False
        return True

    return check


def _compile(schema: Any, memo: dict[int, Check]) -> Check:
    if schema is True:
        return lambda x: True
    if schema is False:
        return lambda x: False
    if not isinstance(schema, dict):
        raise _NotCompiled("a schema that is not an object")
    hit = memo.get(id(schema))
    if hit is not None:
        return hit
    bad = _UNSUPPORTED.intersection(schema)
    if bad:
        raise _NotCompiled(", ".join(sorted(bad)))
    nullable = bool(schema.get("nullable"))
    int_or_string = bool(schema.get("x-kubernetes-int-or-string"))
    checks: list[Check] = []
    # A null where `nullable: true` passes type, enum and x-kubernetes-int-or-string.
    null_exempt: list[Check] = []
    if "type" in schema and not int_or_string:
        null_exempt.append(_type_check(schema))
    if "enum" in schema:
        null_exempt.append(_enum_check(schema["enum"]))
    if int_or_string:
        null_exempt.append(lambda x: not isinstance(x, bool) and (
            isinstance(x, (int, str)) or (isinstance(x, float) and x.is_integer())))
    if null_exempt:
        inner = _all(null_exempt)
        checks.append((lambda x: x is None or inner(x)) if nullable else inner)
    obj = _object_check(schema, memo)
    if obj is not None:
        checks.append(obj)
    if "items" in schema:
        checks.append(_items_check(schema["items"], memo))
    if "anyOf" in schema and not int_or_string:
        if not isinstance(schema["anyOf"], list):
            raise _NotCompiled("anyOf")
        options = [_compile(s, memo) for s in schema["anyOf"]]
        checks.append(lambda x: any(o(x) for o in options))
    if "allOf" in schema:
        if not isinstance(schema["allOf"], list):
            raise _NotCompiled("allOf")
        checks.extend(_compile(s, memo) for s in schema["allOf"])
    if "pattern" in schema:
        rx = go_pattern(schema["pattern"])
        if rx is not None:
            search = rx.search
            checks.append(lambda x: not isinstance(x, str) or search(x) is not None)
    if "format" in schema:
        fmt = schema["format"]
        checks.append(lambda x: check_format(fmt, x))
    for word, limit_kind in (("minLength", str), ("maxLength", str), ("minItems", list), ("maxItems", list)):
        if word in schema:
            checks.append(_length_check(word, schema[word], limit_kind))
    for word in ("minimum", "maximum"):
        if word in schema:
            checks.append(_bound_check(word, schema[word], schema))
    for word, fn in (("x-kubernetes-list-type", list_type), ("x-kubernetes-embedded-resource", embedded)):
        if word in schema:
            checks.append(_generator_check(fn, schema[word], schema))
    out = _all(checks)
    memo[id(schema)] = out
    return out


def _length_check(word: str, limit: Any, kind: type) -> Check:
    if word.startswith("min"):
        return lambda x: not isinstance(x, kind) or len(x) >= limit
    return lambda x: not isinstance(x, kind) or len(x) <= limit


def _bound_check(word: str, bound: Any, schema: dict) -> Check:
    if word == "minimum":
        if schema.get("exclusiveMinimum", False):
            return lambda x: not _is_number(x) or not x <= bound
        return lambda x: not _is_number(x) or not x < bound
    if schema.get("exclusiveMaximum", False):
        return lambda x: not _is_number(x) or not x >= bound
    return lambda x: not _is_number(x) or not x > bound


def compile_schema(schema: dict) -> Check | None:
    """A function obj -> True when `schema` surely accepts obj (False: ask jsonschema), or None
    when the schema uses keywords outside the compiled subset."""
    try:
        check = _compile(schema, {})
    except Exception:  # noqa: BLE001 - _NotCompiled, or a malformed schema: jsonschema alone judges
        return None

    def safe(obj: Any) -> bool:
        try:
            return check(obj)
        except Exception:  # noqa: BLE001 - an odd input: let jsonschema judge (and report) it
            return False

    return safe
