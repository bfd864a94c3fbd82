"""Keyword checks shared by the jsonschema validator (promop.schema.validate) and the compiled
fast path (promop.schema.compiled): OpenAPI `format`, `x-kubernetes-list-type`,
`x-kubernetes-embedded-resource`. One copy, so the two judges cannot drift apart.

`list_type` and `embedded` have jsonschema's keyword signature (validator, value, instance,
schema) and yield ValidationError; the compiled checker only asks whether they yield any. jsonschema is
imported only when one is made (`_error`): valid objects never need it (promop.schema.jsonschema_check)."""

from __future__ import annotations

import base64
import datetime
import ipaddress
import json
import re
import uuid
from typing import Any

from promop.schema.messages import show


_RFC3339 = re.compile(
    r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$", re.ASCII
)
_HOSTNAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$", re.ASCII)
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:[^\s]*$", re.ASCII)


def check_format(fmt: str, value: Any) -> bool:
    """Whether `value` passes OpenAPI `format` `fmt` as the apiserver checks it (unknown formats pass)."""
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


def list_type(validator, list_type, instance, schema):
    """x-kubernetes-list-type set/map: duplicate items (by their map keys) are errors."""
    if not isinstance(instance, list) or list_type not in ("set", "map"):
        return
    seen: dict[str, int] = {}
    keys = schema.get("x-kubernetes-list-map-keys") or []
    item_schema = schema.get("items") or {}
    item_props = item_schema.get("properties", {}) if isinstance(item_schema, dict) else {}
    for i, item in enumerate(instance):
        if list_type == "set":
            ident = _identity(item)
        else:
            if not isinstance(item, dict):
                continue
            key = {k: item.get(k, _default_of(item_props.get(k))) for k in keys}
            ident = tuple(_identity(key[k]) for k in keys)
        if ident in seen:
            shown = show(item) if list_type == "set" else json.dumps(key, ensure_ascii=False, separators=(",", ":"))
            yield _error(f"Duplicate value: {shown}", path=[i])
        else:
            seen[ident] = i


def _identity(value: Any) -> Any:
    """A hashable stand-in for a JSON value, equal for equal JSON only: scalars tagged with their
    type (Python's 1 == 1.0 == True are three JSON values), anything else as its sorted JSON text.
    Built per list item on every check, so the common scalar case avoids json.dumps."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return (kind, value)
    if kind is float:
        return (kind, repr(value))  # -0.0 and 0.0 are two JSON values
    return (dict, json.dumps(value, sort_keys=True))


def _default_of(prop_schema: Any) -> Any:
    return prop_schema.get("default") if isinstance(prop_schema, dict) else None


def embedded(validator, on, instance, schema):
    """x-kubernetes-embedded-resource: apiVersion and kind required, metadata an object."""
    if not on or not isinstance(instance, dict):
        return
    for field in ("apiVersion", "kind"):
        value = instance.get(field)
        if not isinstance(value, str) or not value:
            yield _error("Required value: must not be empty", path=[field])
    if "metadata" in instance and not isinstance(instance["metadata"], dict):
        yield _error(
            f"Invalid value: {show(instance['metadata'])}: must be of type object", path=["metadata"]
        )


def _error(message: str, **kw: Any) -> Any:
    """jsonschema's ValidationError, imported at the first violation."""
    from jsonschema import ValidationError

    return ValidationError(message, **kw)
