"""Semantic equality between the object we want and the object the API holds.

"No API write when nothing changed" depends on ignoring what the server adds
(resourceVersion, uid, managedFields, defaulted spec fields, foreign labels)
while still noticing what a foreign writer changed in the fields we own.
"""

from __future__ import annotations

import base64
import copy
from typing import Any, Mapping

INPUT_HASH = "prometheus-operator-input-hash"
_SERVER_METADATA = ("managedFields", "selfLink")


def is_subset(want: Any, have: Any) -> bool:
    """Every field of `want` is in `have` with an equal value (lists compare element-wise)."""
    if isinstance(want, Mapping):
        return isinstance(have, Mapping) and all(k in have and is_subset(v, have[k]) for k, v in want.items())
    if isinstance(want, list):
        return isinstance(have, list) and len(want) == len(have) and all(
            is_subset(w, h) for w, h in zip(want, have))
    return want == have


def normalise(desired: Mapping[str, Any]) -> dict:
    """A copy of `desired` with Secret `stringData` folded into base64 `data` (what the API stores)."""
    out = copy.deepcopy(dict(desired))
    string_data = out.pop("stringData", None)
    if string_data:
        data = dict(out.get("data") or {})
        for k, v in string_data.items():
            data[k] = base64.b64encode(str(v).encode()).decode()
        out["data"] = data
    return out


def _owner_refs_present(want: list, have: list) -> bool:
    by_uid = {r.get("uid"): r for r in have or []}
    return all(r.get("uid") in by_uid and is_subset(r, by_uid[r.get("uid")]) for r in want or [])


def metadata_equal(desired: Mapping[str, Any], current: Mapping[str, Any]) -> bool:
    """Our labels, annotations and ownerReferences are present; foreign ones are allowed."""
    d, c = desired.get("metadata") or {}, current.get("metadata") or {}
    return (is_subset(d.get("labels") or {}, c.get("labels") or {})
            and is_subset(d.get("annotations") or {}, c.get("annotations") or {})
            and _owner_refs_present(d.get("ownerReferences") or [], c.get("ownerReferences") or []))


def input_hash(obj: Mapping[str, Any] | None) -> str | None:
    return (((obj or {}).get("metadata") or {}).get("annotations") or {}).get(INPUT_HASH)


def semantically_equal(desired: Mapping[str, Any], current: Mapping[str, Any] | None) -> bool:
    """True when writing `desired` over `current` would change nothing we care about.

    Secrets/ConfigMaps: `data`/`binaryData`/`type` must be equal exactly (an
    extra key a foreign writer added is removed). StatefulSets: the input-hash
    annotation decides. Everything else (Service): `spec` of desired must be a
    subset of current, so server defaults (clusterIPs, protocol) are ignored.
    """
    if current is None:
        return False
    desired = normalise(desired)
    if not metadata_equal(desired, current):
        return False
    kind = desired.get("kind")
    if kind in ("Secret", "ConfigMap"):
        return all((desired.get(k) or None) == (current.get(k) or None) for k in ("data", "binaryData")) and (
            "type" not in desired or desired.get("type") == current.get("type"))
    if kind == "StatefulSet":
        return input_hash(desired) is not None and input_hash(desired) == input_hash(current)
    if kind in ("Role", "RoleBinding"):  # no spec: the rules, or whom the role is bound to
        return all(is_subset(desired.get(k), current.get(k)) for k in ("rules", "roleRef", "subjects")
                   if k in desired)
    return is_subset(desired.get("spec") or {}, current.get("spec") or {})


def _merge_owner_refs(want: list, have: list) -> list:
    uids = {r.get("uid") for r in want}
    return [*want, *(r for r in have if r.get("uid") not in uids)]


def for_update(desired: Mapping[str, Any], current: Mapping[str, Any]) -> dict:
    """The PUT body turning `current` into `desired`: keeps foreign labels/annotations/ownerRefs,
    finalizers and resourceVersion (so a concurrent writer gets a 409, not a lost update),
    the Service's allocated clusterIPs, and kubectl's pod-template annotations (rollout restart).
    """
    body = normalise(desired)
    cmd = {k: v for k, v in (current.get("metadata") or {}).items() if k not in _SERVER_METADATA}
    dmd = body.get("metadata") or {}
    md = {**cmd, **{k: v for k, v in dmd.items() if k not in ("labels", "annotations", "ownerReferences")}}
    md["labels"] = {**(cmd.get("labels") or {}), **(dmd.get("labels") or {})}
    md["annotations"] = {**(cmd.get("annotations") or {}), **(dmd.get("annotations") or {})}
    md["ownerReferences"] = _merge_owner_refs(dmd.get("ownerReferences") or [], cmd.get("ownerReferences") or [])
    for k in ("annotations", "ownerReferences"):
        if not md[k]:
            md.pop(k)
    body["metadata"] = md
    kind = body.get("kind")
    if kind == "Service":
        spec = body.setdefault("spec", {})
        for k in ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"):
            if k in (current.get("spec") or {}) and k not in spec:
                spec[k] = current["spec"][k]
    if kind == "StatefulSet":
        cur_tpl = (((current.get("spec") or {}).get("template") or {}).get("metadata") or {}).get("annotations") or {}
        kept = {k: v for k, v in cur_tpl.items() if k.startswith("kubectl.kubernetes.io/")}
        if kept:
            tpl_md = body.setdefault("spec", {}).setdefault("template", {}).setdefault("metadata", {})
            tpl_md["annotations"] = {**kept, **(tpl_md.get("annotations") or {})}
    return body
