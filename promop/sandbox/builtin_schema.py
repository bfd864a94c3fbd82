"""Unknown fields of built-in kinds, found as the apiserver's decoder finds them: against the
kinds' API types. The type tables come from the `kubernetes` client's generated models
(`openapi_types`/`attribute_map`, read as data; no model is ever instantiated), so a field the
server would drop (a typo, a field of a newer API) is dropped here too, with the same Warning
or, under `fieldValidation=Strict`, the same 400."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

_LIST = re.compile(r"^List\[(.+)\]$|^list\[(.+)\]$")
_DICT = re.compile(r"^Dict\[str, (.+)\]$|^dict\(str, (.+)\)$")
# resource key -> model class name where it is not "V1" + Kind
MODEL_NAMES = {("", "events"): "CoreV1Event", ("events.k8s.io", "events"): "EventsV1Event"}
# kinds whose free-form parts the client types as objects anyway; CRDs are not pruned here
SKIPPED = {("apiextensions.k8s.io", "customresourcedefinitions")}


@lru_cache(maxsize=None)
def _fields(model: str) -> dict[str, str] | None:
    """JSON field name -> type name of a generated model; None when there is no such model."""
    try:
        from kubernetes import client
    except ImportError:  # pragma: no cover - the client is a project dependency
        return None
    cls = getattr(client, model, None)
    types, names = getattr(cls, "openapi_types", None), getattr(cls, "attribute_map", None)
    if not isinstance(types, dict) or not isinstance(names, dict):
        return None
    return {names[attr]: kind for attr, kind in types.items() if attr in names}


def model_for(key: tuple[str, str], kind: str, version: str) -> str | None:
    if key in SKIPPED:
        return None
    name = MODEL_NAMES.get(key) or f"{version.capitalize()}{kind}"
    return name if _fields(name) is not None else None


def prune(obj: Any, model: str, parts: tuple = ()) -> list[str]:
    """Remove, in place, the fields `model` does not have; returns their paths."""
    known = _fields(model)
    if known is None or not isinstance(obj, dict):
        return []
    pruned = []
    for key in list(obj):
        if key not in known:
            if not parts and key in ("apiVersion", "kind"):
                continue
            del obj[key]
            pruned.append(".".join(parts + (key,)))
            continue
        pruned += _prune_value(obj[key], known[key], parts + (key,))
    return pruned


def _prune_value(value: Any, kind: str, parts: tuple) -> list[str]:
    match = _LIST.match(kind)
    if match and isinstance(value, list):
        inner = match.group(1) or match.group(2)
        out = []
        for n, item in enumerate(value):
            out += _prune_value(item, inner, parts[:-1] + (f"{parts[-1]}[{n}]",))
        return out
    match = _DICT.match(kind)
    if match and isinstance(value, dict):
        inner = match.group(1) or match.group(2)
        out = []
        for key, item in value.items():
            out += _prune_value(item, inner, parts[:-1] + (f"{parts[-1]}[{key}]",))
        return out
    if isinstance(value, dict) and _fields(kind) is not None:
        return prune(value, kind, parts)
    return []
