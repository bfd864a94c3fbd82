"""TriggerAuthentication / ClusterTriggerAuthentication `status.scaledobjects` (§1.6): the comma-joined
names of the ScaledObjects that reference it, as KEDA writes it on each reconcile and deletion.

Why: `kubectl get ta -o yaml` then tells who uses a credential before it is rotated or deleted. The
list is recomputed from the informer cache (sorted), so a missed update heals on the next reconcile.
"""

from __future__ import annotations

import logging
from typing import Any

from promop.host.logs import fields
from promop.kube.errors import ApiError

from promop.autoscaler.keda.resources import CLUSTERTRIGGERAUTHENTICATIONS, TRIGGERAUTHENTICATIONS

log = logging.getLogger("promop.autoscaler.keda")


def auth_refs(obj: dict) -> set[tuple[str, str]]:
    """(kind, name) of each authenticationRef of a ScaledObject."""
    out = set()
    for t in (obj.get("spec") or {}).get("triggers") or []:
        ref = (t or {}).get("authenticationRef") or {}
        if ref.get("name"):
            out.add((ref.get("kind") or "TriggerAuthentication", ref["name"]))
    return out


def users_of(scaled_objects: list[dict], kind: str, namespace: str, name: str) -> str:
    """Comma-joined names of the live ScaledObjects referencing that authentication (a TriggerAuthentication
    only from its own namespace)."""
    names = sorted({o["metadata"]["name"] for o in scaled_objects
                    if not o["metadata"].get("deletionTimestamp") and (kind, name) in auth_refs(o)
                    and (kind != "TriggerAuthentication" or o["metadata"].get("namespace") == namespace)})
    return ",".join(names)


def sync_auth_status(ctl: Any, obj: dict) -> None:
    """Patch `status.scaledobjects` of each authentication `obj` references, where it differs. A failure
    is logged and left for the next reconcile: it never fails the ScaledObject."""
    namespace = obj["metadata"]["namespace"]
    items = [o for _k, o in ctl.scaledobjects.store.items()]
    for kind, name in sorted(auth_refs(obj)):
        cluster = kind == "ClusterTriggerAuthentication"
        auth = (ctl.cluster_trigger_auths.store.get(name) if cluster
                else ctl.trigger_auths.store.get(f"{namespace}/{name}"))
        if auth is None:
            continue
        want = users_of(items, kind, namespace, name) or None
        if ((auth.get("status") or {}).get("scaledobjects") or None) == want:
            continue
        try:
            ctl.client.patch(CLUSTERTRIGGERAUTHENTICATIONS if cluster else TRIGGERAUTHENTICATIONS, name,
                             {"status": {"scaledobjects": want}}, None if cluster else namespace,
                             subresource="status")
        except ApiError as exc:
            log.warning("could not update the authentication's status",
                        **fields(kind=kind, name=name, namespace=namespace, error=str(exc)))
