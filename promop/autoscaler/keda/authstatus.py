"""TriggerAuthentication / ClusterTriggerAuthentication `status.scaledobjects` and `status.scaledjobs`
(§1.6): the comma-joined names of the ScaledObjects (ScaledJobs) that reference it, as KEDA writes them
on each reconcile and deletion of a ScaledObject (ScaledJob). Each field is patched alone, so the two
writers never overwrite each other's list.

Why: `kubectl get ta -o yaml` then tells who uses a credential before it is rotated or deleted. The
list is recomputed from the informer cache, so a missed update heals on the next reconcile. Order:
KEDA appends a name when its object is reconciled (AppendIntoString: no duplicates, removal keeps the
others' order), so its order is that of reconciles, which no user can predict; promop sorts the names,
which gives the same set deterministically. A field that would be empty is removed (Go's omitempty).
"""

from __future__ import annotations

import logging
from typing import Any

from promop.host.logs import fields
from promop.kube.errors import ApiError

from promop.autoscaler.keda.resources import CLUSTERTRIGGERAUTHENTICATIONS, TRIGGERAUTHENTICATIONS

log = logging.getLogger("promop.autoscaler.keda")


def auth_refs(obj: dict) -> set[tuple[str, str]]:
    """(kind, name) of each authenticationRef of a ScaledObject or ScaledJob (kind "" means
    TriggerAuthentication, as in KEDA)."""
    out = set()
    for t in (obj.get("spec") or {}).get("triggers") or []:
        ref = (t or {}).get("authenticationRef") or {}
        if ref.get("name"):
            out.add((ref.get("kind") or "TriggerAuthentication", ref["name"]))
    return out


def users_of(scaled_objects: list[dict], kind: str, namespace: str, name: str) -> str:
    """Comma-joined names of the live ScaledObjects (or ScaledJobs) referencing that authentication (a
    TriggerAuthentication only from its own namespace; one being deleted no longer counts)."""
    names = sorted({o["metadata"]["name"] for o in scaled_objects
                    if not o["metadata"].get("deletionTimestamp") and (kind, name) in auth_refs(o)
                    and (kind != "TriggerAuthentication" or o["metadata"].get("namespace") == namespace)})
    return ",".join(names)


def sync_auth_status(ctl: Any, obj: dict, field: str = "scaledobjects") -> None:
    """Patch `status.<field>` of each authentication `obj` references, where it differs: `field` is
    "scaledobjects" for a ScaledObject, "scaledjobs" for a ScaledJob. A failure is logged and left for the
    next reconcile: it never fails the object."""
    namespace = obj["metadata"]["namespace"]
    store = ctl.scaledjobs.store if field == "scaledjobs" else ctl.scaledobjects.store
    items = [o for _k, o in store.items()]
    for kind, name in sorted(auth_refs(obj)):
        cluster = kind == "ClusterTriggerAuthentication"
        auth = (ctl.cluster_trigger_auths.store.get(name) if cluster
                else ctl.trigger_auths.store.get(f"{namespace}/{name}"))
        if auth is None:
            continue
        want = users_of(items, kind, namespace, name) or None
        if ((auth.get("status") or {}).get(field) or None) == want:
            continue
        try:
            ctl.client.patch(CLUSTERTRIGGERAUTHENTICATIONS if cluster else TRIGGERAUTHENTICATIONS, name,
                             {"status": {field: want}}, None if cluster else namespace,
                             subresource="status")
        except ApiError as exc:
            log.warning("could not update the authentication's status",
                        **fields(kind=kind, name=name, namespace=namespace, field=field, error=str(exc)))
