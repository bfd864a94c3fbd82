"""PATCH bodies: JSON merge patch (RFC 7386), JSON patch (RFC 6902) and strategic merge patch
(the subset kubectl apply and operators use: maps, and lists merged by their merge key)."""

from __future__ import annotations

import copy
from typing import Any

from promop.sandbox.errors import ApiError, bad_request

MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"

# list field name -> merge key, for the built-in kinds' lists that strategic merge patch merges
MERGE_KEYS = {
    "containers": "name", "initContainers": "name", "ephemeralContainers": "name",
    "volumes": "name", "volumeMounts": "mountPath", "volumeDevices": "devicePath",
    "env": "name", "ports": "containerPort", "imagePullSecrets": "name",
    "ownerReferences": "uid", "conditions": "type", "tolerations": "key",
    "hostAliases": "ip", "topologySpreadConstraints": "topologyKey",
    "volumeClaimTemplates": None, "subsets": None,
}
# primitive lists merged as sets
SET_LISTS = {"finalizers"}


def merge_patch(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


# -- JSON patch -----------------------------------------------------------------------------------

def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise bad_request(f'JSON patch path "{path}" must start with "/"')
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _walk(doc: Any, parts: list[str], path: str) -> Any:
    for part in parts:
        if isinstance(doc, dict) and part in doc:
            doc = doc[part]
        elif isinstance(doc, list) and part.isdigit() and int(part) < len(doc):
            doc = doc[int(part)]
        else:
            raise ApiError(422, f'JSON patch: path "{path}" does not exist')
    return doc


def _list_index(container: list, part: str, path: str, inserting: bool) -> int:
    if part == "-" and inserting:
        return len(container)
    if not part.isdigit():
        raise ApiError(422, f'JSON patch: "{part}" in "{path}" is not an array index')
    index = int(part)
    if index > len(container) or (index == len(container) and not inserting):
        raise ApiError(422, f'JSON patch: index {index} out of range in "{path}"')
    return index


def _add(doc: Any, path: str, value: Any) -> Any:
    parts = _pointer(path)
    if not parts:
        return value
    parent = _walk(doc, parts[:-1], path)
    last = parts[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_list_index(parent, last, path, True), value)
    else:
        raise ApiError(422, f'JSON patch: parent of "{path}" is not a container')
    return doc


def _remove(doc: Any, path: str) -> Any:
    parts = _pointer(path)
    parent = _walk(doc, parts[:-1], path)
    last = parts[-1]
    if isinstance(parent, dict) and last in parent:
        return parent.pop(last)
    if isinstance(parent, list):
        return parent.pop(_list_index(parent, last, path, False))
    raise ApiError(422, f'JSON patch: path "{path}" does not exist')


def json_patch(doc: Any, operations: Any) -> Any:
    if not isinstance(operations, list):
        raise bad_request("JSON patch body must be a list of operations")
    doc = copy.deepcopy(doc)
    for op in operations:
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise bad_request(f"JSON patch operation {op!r} needs 'op' and 'path'")
        kind, path = op["op"], op["path"]
        if kind == "add":
            doc = _add(doc, path, copy.deepcopy(op.get("value")))
        elif kind == "remove":
            _remove(doc, path)
        elif kind == "replace":
            _walk(doc, _pointer(path), path)
            if _pointer(path):
                _remove(doc, path)
            doc = _add(doc, path, copy.deepcopy(op.get("value")))
        elif kind in ("move", "copy"):
            source = op.get("from", "")
            value = _walk(doc, _pointer(source), source)
            value = copy.deepcopy(value)
            if kind == "move":
                _remove(doc, source)
            doc = _add(doc, path, value)
        elif kind == "test":
            if _walk(doc, _pointer(path), path) != op.get("value"):
                raise ApiError(422, f'JSON patch: test failed at "{path}"')
        else:
            raise bad_request(f'JSON patch: unknown op "{kind}"')
    return doc


# -- strategic merge patch -----------------------------------------------------------------------

def strategic_merge(target: Any, patch: Any) -> Any:
    """Maps merge recursively; lists with a known merge key merge by it; `$patch`,
    `$retainKeys`, `$deleteFromPrimitiveList/<f>` and `$setElementOrder/<f>` are honoured."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if patch.get("$patch") == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    if patch.get("$patch") == "delete":
        return None
    result = dict(target) if isinstance(target, dict) else {}
    orders: dict[str, list] = {}
    for key, value in patch.items():
        if key.startswith("$setElementOrder/"):
            orders[key.split("/", 1)[1]] = value
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            result[field] = [x for x in result.get(field) or [] if x not in (value or [])]
            continue
        if key in ("$patch", "$retainKeys"):
            continue
        if value is None:
            result.pop(key, None)
        elif isinstance(value, list) and key in MERGE_KEYS and MERGE_KEYS[key]:
            result[key] = _merge_keyed_list(result.get(key) or [], value, MERGE_KEYS[key])
        elif isinstance(value, list) and key in SET_LISTS:
            merged = list(result.get(key) or [])
            merged += [x for x in value if x not in merged]
            result[key] = merged
        else:
            merged = strategic_merge(result.get(key), value)
            if merged is None:
                result.pop(key, None)
            else:
                result[key] = merged
    if "$retainKeys" in patch:
        keep = set(patch["$retainKeys"] or [])
        result = {k: v for k, v in result.items() if k in keep}
    for field, order in orders.items():
        if isinstance(result.get(field), list) and MERGE_KEYS.get(field):
            result[field] = _reorder(result[field], order, MERGE_KEYS[field])
    return result


def _merge_keyed_list(target: list, patch: list, key: str) -> list:
    result = [copy.deepcopy(item) for item in target]
    if any(isinstance(i, dict) and i.get("$patch") == "replace" for i in patch):
        return [copy.deepcopy(i) for i in patch if not (isinstance(i, dict) and "$patch" in i)]
    for item in patch:
        if not isinstance(item, dict) or key not in item:
            result.append(copy.deepcopy(item))
            continue
        index = next((n for n, existing in enumerate(result)
                      if isinstance(existing, dict) and existing.get(key) == item[key]), None)
        if item.get("$patch") == "delete":
            if index is not None:
                result.pop(index)
        elif index is None:
            result.append(strategic_merge({}, item))
        else:
            result[index] = strategic_merge(result[index], item)
    return result


def _reorder(items: list, order: list, key: str) -> list:
    wanted = [entry.get(key) for entry in order if isinstance(entry, dict)]
    ranked = {value: n for n, value in enumerate(wanted)}
    return sorted(items, key=lambda i: ranked.get(i.get(key) if isinstance(i, dict) else None,
                                                  len(ranked)))


def apply_patch(content_type: str, target: dict, body: Any, builtin: bool) -> dict:
    """Dispatch on the PATCH Content-Type; 415 for types the resource does not accept."""
    media = content_type.split(";")[0].strip().lower()
    if media == JSON_PATCH:
        result = json_patch(target, body)
    elif media == MERGE_PATCH:
        if not isinstance(body, dict):
            raise bad_request("merge patch body must be a JSON object")
        result = merge_patch(target, body)
    elif media == STRATEGIC_PATCH and builtin:
        if not isinstance(body, dict):
            raise bad_request("strategic merge patch body must be a JSON object")
        result = strategic_merge(target, body)
    elif media == APPLY_PATCH:
        if not isinstance(body, dict):
            raise bad_request("apply patch body must be an object")
        result = strategic_merge(target, body) if builtin else merge_patch(target, body)
    else:
        accepted = [JSON_PATCH, MERGE_PATCH, APPLY_PATCH] + ([STRATEGIC_PATCH] if builtin else [])
        raise ApiError(415, f'the body of the request was in an unknown format - accepted media '
                            f'types include: {", ".join(accepted)}')
    if not isinstance(result, dict):
        raise bad_request("the patch did not produce an object")
    return result
