"""Server-side apply over field sets (promop.sandbox.fields' FieldsV1 trees): conflicts with
other managers (409 FieldManagerConflict unless `force`), removal of the fields a manager
stopped applying when no one else owns them, and list-map merging by the CRD schema's keys."""

from __future__ import annotations

import copy
import json
from typing import Any, Iterator

from promop.sandbox import fields
from promop.sandbox.errors import ApiError

_MISSING = object()


def _paths(tree: dict, prefix: tuple = ()) -> Iterator[tuple[tuple, bool]]:
    """(path, is_leaf) for every leaf and member node of a field set."""
    for key, child in tree.items():
        if key == ".":
            continue
        path = prefix + (key,)
        if not child:
            yield path, True
        else:
            if "." in child:
                yield path, False
            yield from _paths(child, path)


def _has(tree: dict, path: tuple) -> bool:
    node = tree
    for element in path:
        if not isinstance(node, dict) or element not in node:
            return False
        node = node[element]
    return True


def _step(value: Any, element: str) -> Any:
    kind, _, text = element.partition(":")
    if kind == "f":
        return value.get(text, _MISSING) if isinstance(value, dict) else _MISSING
    if not isinstance(value, list):
        return _MISSING
    if kind == "k":
        wanted = json.loads(text)
        return next((item for item in value if isinstance(item, dict) and
                     all(item.get(k) == v for k, v in wanted.items())), _MISSING)
    if kind == "v":
        member = json.loads(text)
        return member if member in value else _MISSING
    if kind == "i":
        index = int(text)
        return value[index] if index < len(value) else _MISSING
    return _MISSING


def value_at(obj: Any, path: tuple) -> Any:
    for element in path:
        obj = _step(obj, element)
        if obj is _MISSING:
            return _MISSING
    return obj


def _remove(obj: Any, path: tuple) -> None:
    parent = value_at(obj, path[:-1])
    kind, _, text = path[-1].partition(":")
    if kind == "f" and isinstance(parent, dict):
        parent.pop(text, None)
    elif kind in ("k", "v") and isinstance(parent, list):
        item = _step(parent, path[-1])
        if item is not _MISSING:
            parent.remove(item)


def render_path(path: tuple) -> str:
    """apimachinery's fieldpath notation: `.spec.containers[name="x"].image`."""
    out = ""
    for element in path:
        kind, _, text = element.partition(":")
        if kind == "f":
            out += "." + text
        elif kind == "k":
            out += "[" + ",".join(f"{k}={json.dumps(v)}" for k, v in json.loads(text).items()) + "]"
        elif kind == "v":
            out += f"[={text}]"
        elif kind == "i":
            out += f"[{text}]"
    return out


def _owner_label(entry: dict) -> str:
    version = entry.get("apiVersion") if entry.get("operation") == fields.UPDATE else None
    return f'"{entry.get("manager", "")}"' + (f" using {version}" if version else "")


def conflicts(entries: list[dict] | None, manager: str, live: dict, config: dict,
              applied: dict) -> list[tuple[str, str]]:
    """(owner label, path) for each field `config` sets to another value than the live one
    while another manager owns it."""
    found = []
    leaves = [p for p, leaf in _paths(applied) if leaf]
    for entry in entries or []:
        if entry.get("manager") == manager and entry.get("operation") == fields.APPLY:
            continue
        if entry.get("subresource"):
            continue
        owned = entry.get("fieldsV1") or {}
        for path in leaves:
            if _has(owned, path) and value_at(live, path) != value_at(config, path):
                found.append((_owner_label(entry), render_path(path)))
    return found


def conflict_error(found: list[tuple[str, str]]) -> ApiError:
    if len(found) == 1:
        text = f"conflict with {found[0][0]}: {found[0][1]}"
    else:
        by_owner: dict[str, list[str]] = {}
        for owner, path in found:
            by_owner.setdefault(owner, []).append(path)
        text = "\n".join(sorted(f"conflicts with {owner}" + "".join(f"\n- {p}" for p in paths)
                                for owner, paths in by_owner.items()))
    plural = "" if len(found) == 1 else "s"
    return ApiError(409, f"Apply failed with {len(found)} conflict{plural}: {text}",
                    reason="Conflict", details={"causes": [
                        {"reason": "FieldManagerConflict", "message": f"conflict with {owner}",
                         "field": path} for owner, path in found]})


def previous_apply(entries: list[dict] | None, manager: str, subresource: str = "") -> dict:
    for entry in entries or []:
        if entry.get("manager") == manager and entry.get("operation") == fields.APPLY and \
                entry.get("subresource", "") == subresource:
            return entry.get("fieldsV1") or {}
    return {}


def drop_unapplied(merged: dict, entries: list[dict] | None, manager: str,
                   applied: dict) -> None:
    """Remove from `merged` what `manager` applied before but not now, unless another manager
    owns it too (then it stays, owned by them)."""
    previous = previous_apply(entries, manager)
    if not previous:
        return
    gone = fields.difference(previous, applied) or {}
    others = [e.get("fieldsV1") or {} for e in entries or []
              if not (e.get("manager") == manager and e.get("operation") == fields.APPLY)]
    candidates = sorted((p for p, _ in _paths(gone)), key=len)  # an item before its fields
    for path in candidates:
        if path[0] == "f:metadata" and len(path) < 3:
            continue  # metadata.labels itself, not a label
        if not any(_has(tree, path) for tree in others):
            _remove(merged, path)


def schema_merge(live: Any, config: Any, schema: Any) -> Any:
    """An applied configuration merged into the live object: maps field by field, lists of
    `x-kubernetes-list-type: map` by their keys, `set` lists as a union, others replaced."""
    if isinstance(config, dict) and isinstance(live, dict):
        props = (schema or {}).get("properties") or {} if isinstance(schema, dict) else {}
        extra = schema.get("additionalProperties") if isinstance(schema, dict) else None
        out = dict(live)
        for key, value in config.items():
            sub = props.get(key) if key in props else (extra if isinstance(extra, dict) else None)
            out[key] = schema_merge(live.get(key, _MISSING), value, sub) \
                if key in live else copy.deepcopy(value)
        return out
    if isinstance(config, list) and isinstance(live, list) and isinstance(schema, dict):
        list_type = schema.get("x-kubernetes-list-type")
        items = schema.get("items")
        if list_type == "map":
            keys = schema.get("x-kubernetes-list-map-keys") or []
            out = [copy.deepcopy(i) for i in live]
            for item in config:
                if not isinstance(item, dict):
                    out.append(copy.deepcopy(item))
                    continue
                index = next((n for n, existing in enumerate(out) if isinstance(existing, dict)
                              and all(existing.get(k) == item.get(k) for k in keys)), None)
                if index is None:
                    out.append(copy.deepcopy(item))
                else:
                    out[index] = schema_merge(out[index], item, items)
            return out
        if list_type == "set":
            return list(live) + [copy.deepcopy(i) for i in config if i not in live]
    return copy.deepcopy(config)
