"""From a VPA's targetRef to the label selector of its pods, and owner chains from a pod to its top controller.

Well-known kinds are read directly (spec.selector; a CronJob's job template labels); anything else
through its scale subresource (status.selector), as upstream's target selector fetcher does.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from promop.kube.errors import ApiError
from promop.kube.resources import Resource
from promop.labelselector import Selector, SelectorError, parse_selector
from promop.labelselector import parse as parse_text_selector

KINDS = {
    "Deployment": Resource("apps", "v1", "deployments", kind="Deployment"),
    "StatefulSet": Resource("apps", "v1", "statefulsets", kind="StatefulSet"),
    "DaemonSet": Resource("apps", "v1", "daemonsets", kind="DaemonSet"),
    "ReplicaSet": Resource("apps", "v1", "replicasets", kind="ReplicaSet"),
    "Job": Resource("batch", "v1", "jobs", kind="Job"),
    "CronJob": Resource("batch", "v1", "cronjobs", kind="CronJob"),
    "ReplicationController": Resource("", "v1", "replicationcontrollers", kind="ReplicationController"),
}


class TargetError(Exception):
    """Why a targetRef gives no selector (shown in the ConfigUnsupported condition)."""


def selector_of(obj: dict, kind: str) -> Selector:
    spec = obj.get("spec") or {}
    if kind == "CronJob":
        labels = ((((spec.get("jobTemplate") or {}).get("spec") or {}).get("template") or {}).get("metadata")
                  or {}).get("labels") or {}
        if not labels:
            raise TargetError("CronJob has no labels in spec.jobTemplate.spec.template.metadata.labels")
        return parse_selector({"matchLabels": labels})
    if kind == "ReplicationController":
        return parse_selector({"matchLabels": spec.get("selector") or {}})
    if "selector" not in spec:
        raise TargetError(f"{kind} has no spec.selector")
    return parse_selector(spec["selector"], where=f"{kind}.spec.selector")


def resolve_target(client: Any, namespace: str, target_ref: dict) -> Selector:
    """The selector of the pods `targetRef` manages; TargetError says why not."""
    kind, name = (target_ref or {}).get("kind"), (target_ref or {}).get("name")
    if not kind or not name:
        raise TargetError("spec.targetRef needs kind and name")
    res = KINDS.get(kind)
    try:
        if res is not None:
            return selector_of(client.get(res, name, namespace), kind)
        api_version = target_ref.get("apiVersion") or ""
        group, _, version = api_version.rpartition("/")
        if not version:
            raise TargetError(f"spec.targetRef: unknown kind {kind!r} without apiVersion")
        plural = kind.lower() + "s"
        scale = client.get(Resource(group, version, plural, kind=kind), name, namespace, subresource="scale")
        text = (scale.get("status") or {}).get("selector")
        if not text:
            raise TargetError(f"{kind}/{name}: the scale subresource has no status.selector")
        return parse_text_selector(text)
    except ApiError as exc:
        raise TargetError(f"cannot read {kind}/{name}: {exc}") from None
    except SelectorError as exc:
        raise TargetError(str(exc)) from None


class OwnerCache:
    """ownerReferences of intermediate controllers (ReplicaSets, Jobs), cached for `ttl` seconds."""

    def __init__(self, client: Any, ttl: float = 300.0):
        self.client = client
        self.ttl = ttl
        self._cache: dict[tuple[str, str, str], tuple[float, dict | None]] = {}
        self._lock = threading.Lock()

    def _owner_of(self, namespace: str, kind: str, name: str) -> dict | None:
        key = (namespace, kind, name)
        now = time.monotonic()
        with self._lock:
            hit = self._cache.get(key)
            if hit and now - hit[0] < self.ttl:
                return hit[1]
        res = KINDS.get(kind)
        owner = None
        if res is not None:
            try:
                obj = self.client.get(res, name, namespace)
                owner = controller_ref(obj)
            except ApiError:
                owner = None
        with self._lock:
            self._cache[key] = (now, owner)
        return owner

    def top_controller(self, pod: dict) -> tuple[str, str] | None:
        """(kind, name) at the top of the pod's controller chain (the pod's own owner when unreadable)."""
        ns = (pod.get("metadata") or {}).get("namespace", "")
        ref = controller_ref(pod)
        seen = 0
        while ref is not None and seen < 5:
            parent = self._owner_of(ns, ref["kind"], ref["name"]) if ref["kind"] in ("ReplicaSet", "Job") else None
            if parent is None:
                return ref["kind"], ref["name"]
            ref = parent
            seen += 1
        return (ref["kind"], ref["name"]) if ref else None


def controller_ref(obj: dict) -> dict | None:
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return ref
    return None
