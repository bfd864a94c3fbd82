"""A CRD version's `openAPIV3Schema` checked as apiextensions-apiserver checks it before serving.

Three families of rules, each worded as upstream words them (field paths like
`spec.validation.openAPIV3Schema.properties[spec].properties[hostAliases].x-kubernetes-list-map-keys`):
- OpenAPI restrictions (pkg/apis/apiextensions/validation): fields Kubernetes does not support
  (`$ref`, `patternProperties`, `uniqueItems: true`, ...), the `x-kubernetes-*` extensions'
  consistency (list-type map needs list-map-keys naming required-or-defaulted scalar item
  properties; map-type only on objects; int-or-string without a type), CEL rules that compile;
- structural schema (pkg/apiserver/schema): every node typed except where int-or-string or
  preserve-unknown-fields stands for the type, no `additionalProperties` beside `properties`,
  value validations (anyOf, allOf, oneOf, not) without types or extensions, the root's metadata
  restricted to name and generateName;
- defaults: valid against their own schema, and nothing pruning would drop.
The apiserver refuses such a CRD with 422; the sandbox must too, or a test passes where a cluster fails.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from promop.goregex import go_error
from promop.sandbox.crd_validation_fields import (Cause, child, forbidden, index, invalid, key, not_supported,
                                                  required)
from promop.schema import cel
from promop.schema.validate import unknown_fields, validate

TYPES = ["array", "boolean", "integer", "number", "object", "string"]
UNSUPPORTED = ("$ref", "$schema", "id", "additionalItems", "patternProperties", "definitions", "dependencies")
VALUE_VALIDATIONS = ("anyOf", "allOf", "oneOf", "not")
# what a value validation (inside anyOf/allOf/oneOf/not) may not say, and why
NESTED_FORBIDDEN = {
    "type": "must be empty to be structural", "additionalProperties": "must be undefined to be structural",
    "default": "must be undefined to be structural",
    "nullable": "must be false to be structural", "title": "must be empty to be structural",
    "description": "must be empty to be structural",
    "x-kubernetes-preserve-unknown-fields": "must be false to be structural",
    "x-kubernetes-embedded-resource": "must be false to be structural",
    "x-kubernetes-int-or-string": "must be false to be structural",
    "x-kubernetes-list-type": "must be undefined to be structural",
    "x-kubernetes-list-map-keys": "must be empty to be structural",
    "x-kubernetes-map-type": "must be undefined to be structural",
    "x-kubernetes-validations": "must be empty to be structural",
}
INT_OR_STRING = [{"type": "integer"}, {"type": "string"}]
ROOT, FIELD, ITEM = "root", "field", "item"
RULE_REASONS = ["FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired"]


@dataclass
class _Found:
    """Causes by origin, reported as the apiserver does: OpenAPI restrictions in schema order,
    then structural violations sorted by their text, then (only if nothing else) defaults."""

    openapi: list[Cause] = field(default_factory=list)
    structural: list[Cause] = field(default_factory=list)
    defaults: list[Cause] = field(default_factory=list)

    def all(self) -> list[Cause]:
        found = self.openapi + sorted(self.structural, key=lambda c: f"{c[0]}: {c[1]}")
        return found or self.defaults


def check_schema(schema: Any, path: str) -> list[Cause]:
    """Every reason the apiserver refuses `schema` (the openAPIV3Schema at `path`)."""
    if not isinstance(schema, dict):
        return [required(path, "schemas are required")]
    found = _Found()
    metadata_defaults = _metadata_defaults(schema, path)
    found.openapi.extend(metadata_defaults)
    _node(schema, path, ROOT, found, skip_defaults={c[0] for c in metadata_defaults})
    found.structural.extend(_root(schema, path))
    return found.all()


def _node(s: dict, path: str, level: str, found: _Found, skip_defaults: set[str] = frozenset()) -> None:
    found.openapi.extend(_unsupported(s, path) + _extensions(s, path) + _list_map(s, path) + _rules(s, path))
    found.structural.extend(_typing(s, path, level) + _structural_extensions(s, path, level))
    if child(path, "default") not in skip_defaults:
        found.defaults.extend(_default(s, path))
    if s.get("x-kubernetes-embedded-resource"):
        found.structural.extend(_object_header(s, path))
    for name in VALUE_VALIDATIONS:
        found.structural.extend(_value_validation(s, name, path))
    for name, prop in _dict(s.get("properties")).items():
        if isinstance(prop, dict):
            _node(prop, key(child(path, "properties"), name), FIELD, found, skip_defaults)
    if isinstance(s.get("additionalProperties"), dict):
        _node(s["additionalProperties"], child(path, "additionalProperties"), FIELD, found)
    if isinstance(s.get("items"), dict):
        _node(s["items"], child(path, "items"), ITEM, found)


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _unsupported(s: dict, path: str) -> list[Cause]:
    causes = [forbidden(child(path, f), f"{f} is not supported") for f in UNSUPPORTED if f in s]
    pattern = s.get("pattern")
    if isinstance(pattern, str) and pattern:
        error = go_error(pattern)  # apiextensions compiles it with Go's regexp
        if error is not None:
            causes.append(invalid(child(path, "pattern"), pattern,
                                  f"must be a valid regular expression, but isn't: {error}"))
    if s.get("uniqueItems") is True:
        causes.append(forbidden(child(path, "uniqueItems"),
                                "uniqueItems cannot be set to true since the runtime complexity becomes quadratic"))
    if isinstance(s.get("items"), list):
        causes.append(forbidden(child(path, "items"), "items must be a schema object and not an array"))
    if s.get("additionalProperties") is False:
        causes.append(forbidden(child(path, "additionalProperties"), "additionalProperties cannot be set to false"))
    additional = s.get("additionalProperties")
    if s.get("properties") and (additional is False or isinstance(additional, dict)):
        causes.append(forbidden(child(path, "additionalProperties"),
                                "additionalProperties and properties are mutual exclusive"))
    return causes


def _typing(s: dict, path: str, level: str) -> list[Cause]:
    """Structural: a type at every node, unless int-or-string or preserve-unknown-fields stands for it."""
    t = s.get("type", "")
    if t == "null":
        return [forbidden(child(path, "type"), "type cannot be set to null, use nullable as an alternative")]
    if t and t not in TYPES:
        return [not_supported(child(path, "type"), t, TYPES)]
    causes: list[Cause] = []
    untyped_ok = s.get("x-kubernetes-int-or-string") or s.get("x-kubernetes-preserve-unknown-fields")
    if not t and not untyped_ok and not s.get("x-kubernetes-embedded-resource"):
        where = {ROOT: "at the root", FIELD: "for specified object fields", ITEM: "for specified array items"}[level]
        causes.append(required(child(path, "type"), f"must not be empty {where}"))
    if t == "array" and "items" not in s:
        causes.append(required(child(path, "items"), "must be specified"))
    if level == ROOT and t and t != "object":
        causes.append(invalid(child(path, "type"), t, "must be object at the root"))
    return causes


def _extensions(s: dict, path: str) -> list[Cause]:
    causes: list[Cause] = []
    t = s.get("type", "")
    if s.get("x-kubernetes-preserve-unknown-fields") is False:
        causes.append(invalid(child(path, "x-kubernetes-preserve-unknown-fields"), False, "must be true or undefined"))
    map_type = s.get("x-kubernetes-map-type")
    if map_type is not None:
        if t != "object":
            detail = "must be object if x-kubernetes-map-type is specified"
            causes.append(invalid(child(path, "type"), t, detail) if t else required(child(path, "type"), detail))
        if map_type not in ("atomic", "granular"):
            causes.append(not_supported(child(path, "x-kubernetes-map-type"), map_type, ["atomic", "granular"]))
    return causes


def _structural_extensions(s: dict, path: str, level: str) -> list[Cause]:
    """Embedded resources and int-or-string, as pkg/apiserver/schema's structural invariants."""
    causes: list[Cause] = []
    t = s.get("type", "")
    if s.get("x-kubernetes-int-or-string"):
        for ext in ("x-kubernetes-preserve-unknown-fields", "x-kubernetes-embedded-resource"):
            if s.get(ext):
                causes.append(invalid(child(path, ext), True, "must be false if x-kubernetes-int-or-string is true"))
    if level == ROOT and "additionalProperties" in s:
        causes.append(forbidden(child(path, "additionalProperties"), "must not be used at the root"))
    if s.get("x-kubernetes-embedded-resource"):
        detail = "must be object if x-kubernetes-embedded-resource is true"
        if t != "object":
            causes.append(invalid(child(path, "type"), t, detail) if t else required(child(path, "type"), detail))
        if "additionalProperties" in s:
            causes.append(forbidden(child(path, "additionalProperties"),
                                    "must not be used if x-kubernetes-embedded-resource is set"))
        if not s.get("x-kubernetes-preserve-unknown-fields") and not s.get("properties"):
            causes.append(required(child(path, "properties"), "must not be empty if x-kubernetes-embedded-resource is "
                                   "true without x-kubernetes-preserve-unknown-fields"))
    return causes


def _list_map(s: dict, path: str) -> list[Cause]:
    """x-kubernetes-list-type and x-kubernetes-list-map-keys, as ValidateCustomResourceDefinitionOpenAPISchema."""
    causes: list[Cause] = []
    list_type, keys = s.get("x-kubernetes-list-type"), s.get("x-kubernetes-list-map-keys") or []
    lt_path, keys_path = child(path, "x-kubernetes-list-type"), child(path, "x-kubernetes-list-map-keys")
    if list_type is not None and list_type not in ("atomic", "set", "map"):
        causes.append(not_supported(lt_path, list_type, ["atomic", "set", "map"]))
    if list_type is not None and s.get("type") != "array":
        causes.append(invalid(lt_path, list_type, "must only be used on type=array"))
    if keys and list_type is None:
        causes.append(required(lt_path, "must be map if x-kubernetes-list-map-keys is non-empty"))
    elif keys and list_type != "map":
        causes.append(invalid(lt_path, list_type, "must be map if x-kubernetes-list-map-keys is non-empty"))
    items = s.get("items")
    if list_type == "map":
        if not keys:
            causes.append(required(keys_path, "must not be empty if x-kubernetes-list-type is map"))
        if items is None:
            causes.append(required(child(path, "items"), "must have a schema if x-kubernetes-list-type is map"))
        elif isinstance(items, dict) and items.get("type") != "object":
            causes.append(invalid(child(child(path, "items"), "type"), items.get("type", ""),
                                  "must be object if parent array's x-kubernetes-list-type is map"))
        elif isinstance(items, dict):
            causes.extend(_map_keys(items, keys, path))
    if list_type in ("set", "map") and isinstance(items, dict) and items.get("nullable"):
        causes.append(forbidden(child(child(path, "items"), "nullable"),
                                f"cannot be nullable when x-kubernetes-list-type is {list_type}"))
    if list_type == "set" and isinstance(items, dict):
        causes.extend(_set_items(items, path))
    return causes


def _map_keys(items: dict, keys: list, path: str) -> list[Cause]:
    causes: list[Cause] = []
    props, required_keys = _dict(items.get("properties")), items.get("required") or []
    keys_path, items_path = child(path, "x-kubernetes-list-map-keys"), child(path, "items")
    for i, k in enumerate(keys):
        prop = props.get(k)
        if not isinstance(prop, dict):
            causes.append(invalid(keys_path, keys, "entries must all be names of item properties"))
            continue
        prop_path = key(child(items_path, "properties"), k)
        if prop.get("type") in ("array", "object"):
            causes.append(invalid(child(prop_path, "type"), items.get("type"),
                                  "must be a scalar type if parent array's x-kubernetes-list-type is map"))
        if k not in required_keys and "default" not in prop:
            causes.append(required(child(prop_path, "default"), "this property is in x-kubernetes-list-map-keys, "
                                   "so it must have a default or be a required property"))
        if prop.get("nullable"):
            causes.append(forbidden(child(prop_path, "nullable"),
                                    "this property is in x-kubernetes-list-map-keys, so it cannot be nullable"))
        if k in keys[:i]:
            causes.append(invalid(keys_path, keys, "must not contain duplicate entries"))
    return causes


def _set_items(items: dict, path: str) -> list[Cause]:
    """Items of a set are compared whole: objects must be atomic maps, arrays atomic lists."""
    items_path, detail = child(path, "items"), "must be atomic as item of a list with x-kubernetes-list-type=set"
    if items.get("type") == "object" and items.get("x-kubernetes-map-type") != "atomic":
        field = child(items_path, "x-kubernetes-map-type")
        value = items.get("x-kubernetes-map-type")
        return [invalid(field, value, detail) if value else required(field, detail)]
    if items.get("type") == "array" and items.get("x-kubernetes-list-type", "atomic") != "atomic":
        return [invalid(child(items_path, "x-kubernetes-list-type"), items["x-kubernetes-list-type"], detail)]
    return []


def _rules(s: dict, path: str) -> list[Cause]:
    """x-kubernetes-validations: every rule (and messageExpression) must compile as CEL."""
    rules = s.get("x-kubernetes-validations")
    if rules is None:
        return []
    causes: list[Cause] = []
    base = child(path, "x-kubernetes-validations")
    for i, rule in enumerate(rules if isinstance(rules, list) else []):
        rule = rule if isinstance(rule, dict) else {}
        at = index(base, i)
        text = rule.get("rule")
        if not isinstance(text, str) or not text.strip():
            causes.append(required(child(at, "rule"), "rule is not specified"))
        else:
            error = cel.compile_error(text)
            if error:
                causes.append(invalid(child(at, "rule"), text, f"compilation failed: {error}"))
        message_expression = rule.get("messageExpression")
        if isinstance(message_expression, str) and message_expression.strip():
            error = cel.compile_error(message_expression)
            if error:
                causes.append(invalid(child(at, "messageExpression"), message_expression,
                                      f"messageExpression compilation failed: {error}"))
        if "reason" in rule and rule["reason"] not in RULE_REASONS:
            causes.append(not_supported(child(at, "reason"), rule["reason"], RULE_REASONS))
    return causes


def _default(s: dict, path: str) -> list[Cause]:
    """A default must survive pruning (no unknown fields) and validate against its own schema."""
    if "default" not in s:
        return []
    value, at = s["default"], child(path, "default")
    own = {k: v for k, v in s.items() if k != "default"}
    unknown = unknown_fields(value, own) if isinstance(value, (dict, list)) else []
    if unknown:
        return [invalid(at, value, "must not have unknown fields")]
    if value is None:
        if s.get("nullable"):
            return []
        return [invalid(at, None, "must not be null for non-nullable field")]
    return [(child(at, v.path) if v.path else at, v.message) for v in validate(copy.deepcopy(value), own)]


def _value_validation(s: dict, name: str, path: str) -> list[Cause]:
    """anyOf/allOf/oneOf/not may only restrict values: no types, defaults or extensions (structural),
    except the int-or-string form `anyOf: [{type: integer}, {type: string}]` (or allOf wrapping it)."""
    if name not in s:
        return []
    value, at = s[name], child(path, name)
    if s.get("x-kubernetes-int-or-string") and _int_or_string_form(name, value):
        return []
    nodes = [(value, at)] if name == "not" else [(v, index(at, i)) for i, v in enumerate(value or [])]
    causes: list[Cause] = []
    for node, node_path in nodes:
        causes.extend(_nested(node, node_path, s, path))
    return causes


def _int_or_string_form(name: str, value: Any) -> bool:
    if name == "anyOf":
        return value == INT_OR_STRING
    if name == "allOf" and isinstance(value, list) and value:
        return value[0] == {"anyOf": INT_OR_STRING}
    return False


def _nested(v: Any, path: str, structural: dict, structural_path: str) -> list[Cause]:
    """A value validation at `path`: nothing structural in it, and nothing the structural part
    (at `structural_path`) lacks: a field or items named there must exist beside it too."""
    if not isinstance(v, dict):
        return []
    causes = [forbidden(child(path, f), why) for f, why in NESTED_FORBIDDEN.items()
              if v.get(f) not in (None, False, "")]
    causes.extend(_unsupported(v, path))
    if "metadata" in _dict(v.get("properties")):
        causes.append(forbidden(key(child(path, "properties"), "metadata"),
                                "must not be specified in a nested context"))
    known = _dict(structural.get("properties"))
    open_map = isinstance(structural.get("additionalProperties"), dict)
    for name, prop in _dict(v.get("properties")).items():
        v_at, s_at = key(child(path, "properties"), name), key(child(structural_path, "properties"), name)
        if name not in known and not open_map:
            causes.append(required(s_at, f"because it is defined in {v_at}"))
        sub = known.get(name) if name in known else structural.get("additionalProperties")
        causes.extend(_nested(prop, v_at, _dict(sub), s_at))
    if isinstance(v.get("items"), dict):
        if not isinstance(structural.get("items"), dict):
            causes.append(required(child(structural_path, "items"), f"because it is defined in {child(path, 'items')}"))
        causes.extend(_nested(v["items"], child(path, "items"), _dict(structural.get("items")),
                              child(structural_path, "items")))
    for name in VALUE_VALIDATIONS:
        inner = v.get(name)
        for i, node in enumerate([inner] if name == "not" else inner or []):
            at = child(path, name) if name == "not" else index(child(path, name), i)
            causes.extend(_nested(node, at, structural, structural_path))
    return causes


def _root(s: dict, path: str) -> list[Cause]:
    """At the root, kind and apiVersion are strings, and metadata is an object that may only
    restrict name and generateName (the apiserver owns ObjectMeta's schema)."""
    causes = _object_header(s, path)
    metadata = _dict(s.get("properties")).get("metadata")
    if not isinstance(metadata, dict):
        return causes
    names = set(_dict(metadata.get("properties")))
    extra = {k for k in metadata if k not in ("type", "properties", "default")}
    if extra or (names and not names <= {"name", "generateName"}):
        causes.append(forbidden(key(child(path, "properties"), "metadata"), "must not specify anything other than "
                                "name and generateName, but metadata is implicitly specified"))
    return causes


def _metadata_defaults(s: dict, path: str) -> list[Cause]:
    """No default anywhere in the root's metadata: ObjectMeta is the apiserver's."""
    metadata = _dict(s.get("properties")).get("metadata")
    found: list[Cause] = []

    def walk(node: Any, at: str) -> None:
        if not isinstance(node, dict):
            return
        if "default" in node:
            found.append(forbidden(child(at, "default"), "must not be set in top-level metadata"))
        for name, sub in _dict(node.get("properties")).items():
            walk(sub, key(child(at, "properties"), name))

    walk(metadata, key(child(path, "properties"), "metadata"))
    return found


def _object_header(s: dict, path: str) -> list[Cause]:
    """What the root and every embedded resource share: kind and apiVersion strings, metadata an object."""
    causes: list[Cause] = []
    props = _dict(s.get("properties"))
    for name in ("kind", "apiVersion"):
        if isinstance(props.get(name), dict) and props[name].get("type") != "string":
            causes.append(invalid(child(key(child(path, "properties"), name), "type"), props[name].get("type", ""),
                                  "must be string"))
    metadata = props.get("metadata")
    if isinstance(metadata, dict) and metadata.get("type", "") != "object":
        causes.append(invalid(child(key(child(path, "properties"), "metadata"), "type"), metadata["type"],
                              "must be object"))
    return causes
