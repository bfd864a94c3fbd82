"""metadata.managedFields: which manager set which fields, as a kube-apiserver >= 1.18 records
on every write (server-side field tracking in the FieldsV1 format).

Field sets are trees in the FieldsV1 wire format itself: `f:<field>` for map fields,
`k:{"name":"x"}` for items of lists keyed by a merge key, `v:"x"` for items of set lists
(finalizers); a path that is itself a member and has children carries `".": {}`; a member
with no children is `{}`. Working in the wire format keeps writes cheap: no conversion.

What is recorded, as upstream does:
- an Update (create, PUT, JSON merge / strategic / JSON patch) owns the fields it added or
  changed (on create: all fields); its set is merged into the manager's previous Update set,
  and its time moves only when it changed something;
- an Apply owns exactly the fields of the applied configuration (replacing its previous set);
- a write takes the fields whose values it changed from the other managers, and fields it
  removes from the object leave every set; a manager with no field left loses its entry;
- entries are keyed by (manager, operation, subresource, and for Updates the apiVersion);
- server-owned metadata (name, namespace, uid, resourceVersion, generation, ...) and
  apiVersion/kind are never in a set.

Simplifications (documented in the README): an Apply never conflicts (it acts as with
`force=true`) and does not remove fields its applier stopped applying (the sandbox's apply
merges); lists are keyed by the usual merge keys (`name`, `containerPort`/`port`+`protocol`,
`mountPath`, `uid`, `type`, ...) without consulting a schema; client-sent managedFields are
ignored (the real apiserver lets an update overwrite or clear them; here the server keeps
tracking, which is simpler and cannot be corrupted by a client).
"""

from __future__ import annotations

import json

from promop.sandbox.gc import now

UPDATE, APPLY = "Update", "Apply"
FIELD_MANAGER_MAX_LENGTH = 128

# metadata the server owns: never part of a field set (upstream strips the same, plus
# deletionTimestamp/deletionGracePeriodSeconds, which only DELETE sets here)
SERVER_OWNED = frozenset({"name", "namespace", "uid", "resourceVersion", "generation",
                          "creationTimestamp", "managedFields", "selfLink",
                          "deletionTimestamp", "deletionGracePeriodSeconds"})
# list field -> (item fields one of which an item must have to be keyed, further key fields);
# the key fields an item has form its k:{...}. Other lists of objects are keyed by name.
LIST_KEYS = {
    "ports": (("containerPort", "port"), ("protocol",)),
    "volumeMounts": (("mountPath",), ()), "volumeDevices": (("devicePath",), ()),
    "ownerReferences": (("uid",), ()), "conditions": (("type",), ()),
    "tolerations": (("key",), ()), "hostAliases": (("ip",), ()),
    "topologySpreadConstraints": (("topologyKey",), ("whenUnsatisfiable",)),
}
BY_NAME = (("name",), ())
SET_LISTS = frozenset({"finalizers"})
_RANK = {".": 0, "f": 1, "k": 2, "v": 3, "i": 4}
_SHARED_MAX = 4096
_shared: dict[str, dict] = {}  # encoded set -> one shared tree (stored sets are never mutated)


def manager_from_user_agent(user_agent: str) -> str:
    """The apiserver's default manager: the User-Agent up to its first '/', printable
    characters only, at most 128 of them."""
    prefix = user_agent.split("/", 1)[0]
    return "".join(c for c in prefix if c.isprintable())[:FIELD_MANAGER_MAX_LENGTH]


# -- field sets -----------------------------------------------------------------------------------

def _item_key(item, field: str) -> str | None:
    """`k:{...}` for an item of a keyed list, None when the item has no key field."""
    if not isinstance(item, dict):
        return None
    required, extra = LIST_KEYS.get(field, BY_NAME)
    key = {n: item[n] for n in required + extra if n in item}
    if not any(n in key for n in required):
        return None
    return "k:" + json.dumps(key, separators=(",", ":"), sort_keys=True)


def _list_children(items: list, field: str) -> dict[str, object] | None:
    """{child path: item} for a set or keyed list; None for an atomic list."""
    if field in SET_LISTS:
        return {"v:" + json.dumps(i, separators=(",", ":")): None for i in items}
    keys = [_item_key(i, field) for i in items]
    if not keys or None in keys:
        return None
    return dict(zip(keys, items))


def _node(member: bool, children: dict) -> dict:
    return {".": {}, **children} if member and children else children


def _added(value, field: str) -> dict:
    """The set of a value that was not there before: itself and everything under it."""
    if isinstance(value, dict):
        return _node(True, {"f:" + k: _added(v, k) for k, v in value.items()})
    if isinstance(value, list):
        children = _list_children(value, field)
        if children:
            return _node(True, {path: _added(item, "") for path, item in children.items()})
    return {}


def _walk(base, walked, field: str, missing, differs) -> dict | None:
    """The paths of `walked` that `base` lacks (each as `missing(value, field)` says) or has
    with another value (as `differs(value, field)` says); None when there are none."""
    if base == walked:
        return None
    if isinstance(walked, dict) and isinstance(base, dict):
        out = {}
        for k, v in walked.items():
            sub = missing(v, k) if k not in base else _walk(base[k], v, k, missing, differs)
            if sub is not None:
                out["f:" + k] = sub
        return out or None
    if isinstance(walked, list) and isinstance(base, list):
        walked_items, base_items = _list_children(walked, field), _list_children(base, field)
        if walked_items is not None and base_items is not None:
            out = {}
            for path, item in walked_items.items():
                if path not in base_items:
                    sub = missing(item, "")
                elif path[0] == "k":
                    sub = _walk(base_items[path], item, "", missing, differs)
                else:
                    sub = None  # a set member in both
                if sub is not None:
                    out[path] = sub
            return out or None
    return differs(walked, field)


def _changed(old, new, field: str) -> dict | None:
    """The set of what `new` adds or changes relative to `old`; None when nothing."""
    return _walk(old, new, field, _added, _added)


def _removed(old, new, field: str) -> dict | None:
    """The paths of `old` that `new` no longer has; a leaf `{}` here means the whole subtree
    (a changed value is not a removed one)."""
    return _walk(new, old, field, lambda _v, _f: {}, lambda _v, _f: None)


def _applied(value, field: str) -> dict | None:
    """The set of an applied configuration: leaves, atomic lists and list items; maps only
    through their fields (an empty map owns nothing)."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            sub = _applied(v, k)
            if sub is not None:
                out["f:" + k] = sub
        return out or None
    if isinstance(value, list):
        children = _list_children(value, field)
        if children is not None:
            out = {}
            for path, item in children.items():
                out[path] = _node(True, _applied(item, "") or {}) if path[0] == "k" else {}
            return out or None
    return {}


def _top(old: dict | None, new: dict, one) -> dict:
    """Apply `one(old_value_or_missing, new_value, field)` to the user-owned top-level and
    metadata fields of an object (the fields of `new`)."""
    old = old or {}
    out = {}
    for k, v in new.items():
        if k in ("apiVersion", "kind", "metadata"):
            continue
        sub = one(old.get(k, _MISSING), v, k)
        if sub is not None:
            out["f:" + k] = sub
    meta, old_meta = new.get("metadata") or {}, old.get("metadata") or {}
    fields = {}
    for k, v in meta.items():
        if k in SERVER_OWNED:
            continue
        sub = one(old_meta.get(k, _MISSING), v, k)
        if sub is not None:
            fields["f:" + k] = sub
    if fields:
        out["f:metadata"] = fields
    return out


_MISSING = object()


def update_set(old: dict | None, new: dict) -> dict:
    """What an Update from `old` (None: a create) to `new` sets."""
    return _top(old, new, lambda o, v, k: _added(v, k) if o is _MISSING else _changed(o, v, k))


def removed_set(old: dict, new: dict) -> dict:
    """What an update from `old` to `new` removed: no manager owns it any more."""
    return _top(new, old, lambda n, o, k: {} if n is _MISSING else _removed(o, n, k))


def apply_set(config: dict) -> dict:
    """What an Apply of `config` (the request body) owns."""
    return _top(None, config, lambda _o, v, k: _applied(v, k))


def union(a: dict, b: dict) -> dict:
    """The paths of both sets (a path is a member when it is one in either)."""
    member = not a or "." in a or not b or "." in b
    out = {k: v for k, v in a.items() if k != "."}
    for k, v in b.items():
        if k != ".":
            out[k] = union(out[k], v) if k in out else v
    return _node(member, out)


def difference(owned: dict, removed: dict) -> dict | None:
    """`owned` without the paths in `removed` (a leaf there takes the whole subtree); None when
    nothing is left."""
    out = {}
    for k, v in owned.items():
        if k == ".":
            continue
        gone = removed.get(k)
        if gone is None:
            out[k] = v
        elif gone:
            sub = difference(v, gone)
            if sub is not None:
                out[k] = sub
    member = not owned or "." in owned
    return _node(member, out) if member or out else None


def canonical(node: dict) -> dict:
    """Children in the apiserver's order: '.', then f:, k:, v: paths, each sorted."""
    return {k: canonical(node[k]) for k in sorted(node, key=lambda p: (_RANK.get(p[0], 5), p))}


def shared(tree: dict) -> dict:
    """One tree object for equal sets: 10,000 similar objects hold one fieldsV1, not 10,000
    (less memory, and far fewer containers for the cyclic GC to traverse). Sandboxes in one
    process share the cache: dict operations are atomic, a race costs a duplicate at worst."""
    encoded = json.dumps(tree, separators=(",", ":"))
    found = _shared.get(encoded)
    if found is None:
        if len(_shared) >= _SHARED_MAX:
            _shared.clear()
        found = _shared[encoded] = tree
    return found


# -- entries --------------------------------------------------------------------------------------

def _identity(entry: dict) -> tuple:
    version = entry.get("apiVersion", "") if entry.get("operation") == UPDATE else ""
    return (entry.get("manager", ""), entry.get("operation"), version,
            entry.get("subresource", ""))


def _sort_key(entry: dict) -> tuple:
    return (entry.get("operation", ""), entry.get("time", ""), entry.get("manager", ""),
            entry.get("apiVersion", ""), entry.get("subresource", ""))


def disown(entries: list[dict] | None, removed: dict,
           keep: tuple | None = None) -> list[dict] | None:
    """Take fields out of every manager's set but the one with identity `keep`; a manager
    left with none goes."""
    if not entries or not removed:
        return entries
    kept = []
    for entry in entries:
        if keep is not None and _identity(entry) == keep:
            kept.append(entry)
            continue
        left = difference(entry.get("fieldsV1") or {}, removed)
        if left == entry.get("fieldsV1"):
            kept.append(entry)
        elif left:
            kept.append(dict(entry, fieldsV1=shared(left)))
    return kept


def record(entries: list[dict] | None, manager: str, operation: str, api_version: str,
           fields: dict, subresource: str = "", taken: dict | None = None) -> list[dict]:
    """The managedFields after one write; `entries` is not modified. `taken`: the fields
    whose values this write changed, which other managers no longer own. An Update that set
    nothing leaves the entries as they were."""
    entries = list(entries or [])
    if operation == UPDATE and not fields:
        return entries
    entry = {"manager": manager, "operation": operation, "apiVersion": api_version,
             "time": now(), "fieldsType": "FieldsV1"}
    if not manager:
        del entry["manager"]
    identity = _identity(entry | {"subresource": subresource})
    if taken:
        entries = disown(entries, taken, identity)
    for n, existing in enumerate(entries):
        if _identity(existing) == identity:
            del entries[n]
            if operation == UPDATE:
                fields = union(existing.get("fieldsV1") or {}, fields)
            break
    if fields:
        entry["fieldsV1"] = shared(canonical(fields))
        if subresource:
            entry["subresource"] = subresource
        entries.append(entry)
    entries.sort(key=_sort_key)
    return entries


def same_ignoring_times(a: list[dict] | None, b: list[dict] | None) -> bool:
    """Whether two managedFields lists differ only in timestamps: the apiserver then keeps the
    old times, so a write that changes nothing else stays a no-op."""
    a, b = a or [], b or []
    if len(a) != len(b):
        return False
    return all({k: v for k, v in x.items() if k != "time"} ==
               {k: v for k, v in y.items() if k != "time"} for x, y in zip(a, b))
