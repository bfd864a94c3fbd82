"""PATCH bodies: JSON merge patch (RFC 7386), JSON patch (RFC 6902, on the `jsonpatch` package) and
strategic merge patch (the subset kubectl apply and operators use: maps, and lists merged by their
merge key)."""

from __future__ import annotations

import copy
import json
import re
from types import MappingProxyType
from typing import Any

import jsonpatch
import jsonpointer

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
# RFC 6902 is the `jsonpatch` package's; what is ours is what Go's evanphx/json-patch v4 (the
# apiserver's) does differently from it, and the apiserver's answers:
# - `test` compares JSON values: `1` is not `true` (Python's `1 == True` is), `1` is `1.0`;
# - array indices are Go's strconv.Atoi: `01` and `+1` are 1, and negative indices count from
#   the end (SupportNegativeIndices defaults to true; for `add`, -1 is the end);
# - `add` and `replace` without `value` write null;
# - a body that is not a list of operations: 400 with the decoder's message;
# - more than 10,000 operations: 413;
# - an operation that fails: 422 Invalid, "the server rejected our request due to an error in
#   our request" (NewGenericServerResponse: the library's message is not passed on).

MAX_JSON_PATCH_OPERATIONS = 10000


def _json_equal(a: Any, b: Any) -> bool:
    """Equality of JSON values: booleans are not numbers, numbers compare by value."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


class _TestOperation(jsonpatch.TestOperation):
    """`test` with JSON equality (see _json_equal)."""

    def apply(self, obj: Any) -> Any:
        try:
            value = self.pointer.resolve(obj)
        except jsonpointer.JsonPointerException as e:
            raise jsonpatch.JsonPatchTestFailed(str(e)) from None
        if "value" not in self.operation:
            raise jsonpatch.InvalidJsonPatch("The operation does not contain a 'value' member")
        if not _json_equal(value, self.operation["value"]):
            raise jsonpatch.JsonPatchTestFailed(f"{value!r} ({type(value).__name__}) is not equal to "
                                                f"tested value {self.operation['value']!r}")
        return obj


class _Patch(jsonpatch.JsonPatch):
    operations = MappingProxyType(dict(jsonpatch.JsonPatch.operations, test=_TestOperation))


def _rejected() -> ApiError:
    return ApiError(422, "the server rejected our request due to an error in our request",
                    details={})


def json_patch(doc: Any, operations: Any) -> Any:
    """`doc` with RFC 6902 `operations` applied (doc is not changed); ApiError as the apiserver."""
    if not isinstance(operations, list):
        raise bad_request(f"json: cannot unmarshal {_json_type(operations)} into Go value of type "
                          f"jsonpatch.Patch")
    if not all(isinstance(op, dict) for op in operations):
        raise bad_request("json: cannot unmarshal array into Go value of type jsonpatch.Operation")
    if len(operations) > MAX_JSON_PATCH_OPERATIONS:
        raise ApiError(413, f"Request entity too large: The allowed maximum operations in a JSON "
                            f"patch is {MAX_JSON_PATCH_OPERATIONS}, got {len(operations)}")
    result = copy.deepcopy(doc)
    try:
        for op in operations:
            result = _Patch([_as_go_reads_it(result, op)]).apply(result, in_place=True)
    except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException, TypeError,
            KeyError, IndexError, AttributeError):
        raise _rejected() from None
    return result


_GO_INT = re.compile(r"^[+-]?[0-9]+$")


def _as_go_reads_it(doc: Any, op: dict) -> dict:
    """`op` rewritten to what evanphx/json-patch v4 makes of it on `doc` (see above)."""
    op = dict(op)
    if op.get("op") in ("add", "replace") and "value" not in op:
        op["value"] = None
    for key in ("path", "from"):
        if isinstance(op.get(key), str):
            op[key] = _go_indices(doc, op[key], adding=key == "path" and op.get("op") == "add")
    return op


def _go_indices(doc: Any, path: str, adding: bool) -> str:
    """Array indices in `path` as Go's Atoi reads them, negative ones resolved against `doc`."""
    if not path.startswith("/"):
        return path
    parts = path[1:].split("/")
    node = doc
    for n, part in enumerate(parts):
        last = n == len(parts) - 1
        if isinstance(node, list):
            if not _GO_INT.match(part):
                break
            index = int(part)
            size = len(node) + (1 if last and adding else 0)
            if -size <= index < 0:
                index += size
            parts[n] = str(index)
            if last or not 0 <= index < len(node):
                break
            node = node[index]
        elif isinstance(node, dict):
            key = part.replace("~1", "/").replace("~0", "~")
            if last or key not in node:
                break
            node = node[key]
        else:
            break
    return "/" + "/".join(parts)


def _json_type(value: Any) -> str:
    if isinstance(value, dict):
        return "object"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    return "null" if value is None else "value"


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
    if not isinstance(result, dict) and media == JSON_PATCH:
        shown = json.dumps(result, separators=(",", ":"))
        raise ApiError(422, f' "" is invalid: patch: Invalid value: {json.dumps(shown)}: json: cannot '
                            f"unmarshal {_json_type(result) if result is not None else 'null'} into Go "
                            f"value of type map[string]interface {{}}")
    if not isinstance(result, dict):
        raise bad_request("the patch did not produce an object")
    return result
